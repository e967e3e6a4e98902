package im.routing;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;

/**
 * Decoded state-store values of one processor, reused while the stored text is unchanged. The
 * store stays the only truth: every lookup passes the value just read from it, and a cached
 * object is returned only when its text equals that value, so a restore, another writer or a
 * failed write can never make the processor see anything the store does not hold. What it saves
 * is the JSON parse (the routing path read the same conversation log, interest set and gateway
 * heartbeats once or several times per event; a profile at 600 events/s put a quarter of the
 * delivery thread in those parses).
 *
 * <p>Values must not be changed while cached: a caller that mutates one first {@linkplain #take
 * takes} it out and {@linkplain #put puts} it back with its new text once that is stored. At most
 * {@code capacity} keys are kept, least recently used first out. Not thread-safe: one per
 * processor (a Streams task runs on one thread).
 */
public final class DecodedValues<V> {
    private record Entry<V>(String text, V value) {
    }

    private final Function<String, V> decode;
    private final Map<String, Entry<V>> byKey;

    /** @param decode text → value; never given null */
    public DecodedValues(int capacity, Function<String, V> decode) {
        if (capacity < 1) throw new IllegalArgumentException("capacity must be at least 1, got " + capacity);
        this.decode = decode;
        this.byKey = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Entry<V>> eldest) {
                return size() > capacity;
            }
        };
    }

    /**
     * The decoded {@code text} (the store's current value of {@code key}), or null for null text.
     * The returned object stays cached: the caller must not change it.
     */
    public V get(String key, String text) {
        if (text == null) {
            byKey.remove(key);
            return null;
        }
        Entry<V> e = byKey.get(key);
        if (e != null && e.text().equals(text)) return e.value();
        V v = decode.apply(text);
        byKey.put(key, new Entry<>(text, v));
        return v;
    }

    /**
     * Like {@link #get}, but the value leaves the cache and is the caller's to change; {@link #put}
     * it back after its new text is stored.
     */
    public V take(String key, String text) {
        Entry<V> e = byKey.remove(key);
        if (text == null) return null;
        return e != null && e.text().equals(text) ? e.value() : decode.apply(text);
    }

    /** {@code value} is what the store now holds as {@code text} under {@code key}. */
    public void put(String key, String text, V value) {
        byKey.put(key, new Entry<>(text, value));
    }

    /** Keys cached now (for tests). */
    int size() {
        return byKey.size();
    }
}
