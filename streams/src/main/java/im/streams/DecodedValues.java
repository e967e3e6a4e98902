package im.streams;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.function.Function;

/**
 * Decoded state-store values of one processor, reused while the stored text is unchanged. The
 * store stays the only truth: every lookup passes the value just read from it, and a cached
 * object is returned only when its text equals that value, so a restore, another writer or a
 * failed write can never make the processor see anything the store does not hold. What it saves
 * is the JSON parse (the routing path reads the same registrations and gateway heartbeats once
 * or several times per event; a profile at 600 events/s put a quarter of the
 * delivery thread in those parses). Now it keeps each registration the router reads per event and
 * each gateway's heartbeat.
 *
 * <p>Values must not be changed while cached (they are shared by every lookup of the same text).
 * The cache is bounded by the length of the texts it keeps, not by a count of keys: least recently
 * used keys leave first, and a text longer than the whole budget is decoded but not kept. Not thread-safe: one per processor (a Streams task runs on one thread).
 */
public final class DecodedValues<V> {
    private record Entry<V>(String text, V value) {
    }

    private final Function<String, V> decode;
    private final long maxChars;
    /** Access order: the first entry is the least recently used. */
    private final LinkedHashMap<String, Entry<V>> byKey = new LinkedHashMap<>(16, 0.75f, true);
    private long chars;

    /**
     * @param maxChars at most this many characters of stored text are kept, with their decoded values
     * @param decode   text → value; never given null
     */
    public DecodedValues(long maxChars, Function<String, V> decode) {
        if (maxChars < 1) throw new IllegalArgumentException("maxChars must be at least 1, got " + maxChars);
        this.maxChars = maxChars;
        this.decode = decode;
    }

    /**
     * The decoded {@code text} (the store's current value of {@code key}), or null for null text.
     * The returned object stays cached: the caller must not change it.
     */
    public V get(String key, String text) {
        if (text == null) {
            forget(key);
            return null;
        }
        Entry<V> e = byKey.get(key);
        if (e != null && e.text().equals(text)) return e.value();
        V v = decode.apply(text);
        put(key, text, v);
        return v;
    }

    /** {@code value} is what the store now holds as {@code text} under {@code key}. */
    private void put(String key, String text, V value) {
        forget(key);
        if (text.length() > maxChars) return;
        byKey.put(key, new Entry<>(text, value));
        chars += text.length();
        Iterator<Entry<V>> eldest = byKey.values().iterator();
        while (chars > maxChars) {
            chars -= eldest.next().text().length();
            eldest.remove();
        }
    }

    private Entry<V> forget(String key) {
        Entry<V> e = byKey.remove(key);
        if (e != null) chars -= e.text().length();
        return e;
    }

    /** Keys cached now (for tests). */
    int size() {
        return byKey.size();
    }

    /** Characters of text cached now (for tests). */
    long chars() {
        return chars;
    }
}
