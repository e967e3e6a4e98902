package im.reliability;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.ToLongFunction;

/**
 * What a device's SDK store holds, read for the checker while the SDK may still be storing (a
 * live client, or an old install whose queued batches are still being written after its socket
 * closed).
 *
 * <p>The cursor of each conversation is read <em>before</em> its events. Events are never removed
 * and a seq at or below the cursor is never added later, so every seq the SDK promised by that
 * cursor is already in the event list read after it: a snapshot can only under-state the cursor,
 * never invent a "stored nothing up to the cursor" gap. Reading them the other way round (events,
 * then cursor) let a batch commit in between and reported its seq as missing below the cursor
 * (a false {@code STORE_MISSING} under load).
 *
 * @param stored seqs in the store per conversation (conversations with none left out)
 * @param local  the local contiguous cursor per conversation (kept where {@code keep} says so)
 */
record StoreSnapshot(Map<String, List<Long>> stored, Map<String, Long> local) {

    /**
     * @param convs   the conversations to read
     * @param cursor  the store's cursor of a conversation
     * @param seqs    the seqs of a conversation's stored events
     * @param keep    whether a conversation's cursor belongs in {@link #local} (given its value)
     */
    static StoreSnapshot read(Collection<String> convs, ToLongFunction<String> cursor, Function<String, List<Long>> seqs,
                              Predicate<Map.Entry<String, Long>> keep) {
        Map<String, List<Long>> stored = new TreeMap<>();
        Map<String, Long> local = new TreeMap<>();
        for (String conv : convs) {
            long c = cursor.applyAsLong(conv); // first: see the class comment
            List<Long> s = seqs.apply(conv);
            if (!s.isEmpty()) stored.put(conv, List.copyOf(s));
            if (keep.test(Map.entry(conv, c))) local.put(conv, c);
        }
        return new StoreSnapshot(stored, local);
    }
}
