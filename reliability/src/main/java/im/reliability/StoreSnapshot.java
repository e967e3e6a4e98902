package im.reliability;

import im.client.api.ReceivedEvent;
import im.protocol.Event;
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
 * <p>Bodies come from the same read as the seqs: a recall and the emptying of what it recalls are one
 * store transaction, so a snapshot that holds the recall holds the tombstones.
 *
 * @param stored seqs in the store per conversation (conversations with none left out)
 * @param local  the local contiguous cursor per conversation (kept where {@code keep} says so)
 * @param bodies the stored body of every message and edit per conversation, by seq
 */
record StoreSnapshot(Map<String, List<Long>> stored, Map<String, Long> local, Map<String, Map<Long, String>> bodies) {

    /**
     * @param convs   the conversations to read
     * @param cursor  the store's cursor of a conversation
     * @param events  a conversation's stored events, in seq order
     * @param keep    whether a conversation's cursor belongs in {@link #local} (given its value)
     */
    static StoreSnapshot read(Collection<String> convs, ToLongFunction<String> cursor, Function<String, List<ReceivedEvent>> events,
                              Predicate<Map.Entry<String, Long>> keep) {
        Map<String, List<Long>> stored = new TreeMap<>();
        Map<String, Long> local = new TreeMap<>();
        Map<String, Map<Long, String>> bodies = new TreeMap<>();
        for (String conv : convs) {
            long c = cursor.applyAsLong(conv); // first: see the class comment
            List<ReceivedEvent> evs = events.apply(conv);
            if (!evs.isEmpty()) stored.put(conv, evs.stream().map(ReceivedEvent::seq).toList());
            for (ReceivedEvent e : evs) {
                if (Event.MSG.equals(e.kind()) || Event.EDIT.equals(e.kind())) {
                    bodies.computeIfAbsent(conv, k -> new TreeMap<>()).put(e.seq(), e.body() == null ? "" : e.body());
                }
            }
            if (keep.test(Map.entry(conv, c))) local.put(conv, c);
        }
        return new StoreSnapshot(stored, local, bodies);
    }
}
