package im.examples;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The differences between a history rebuilt from the topic and the one in PostgreSQL. Pure.
 *
 * @param missing    in PostgreSQL, not on the topic
 * @param extra      on the topic, not in PostgreSQL
 * @param mismatched on both, with different content
 * @param recalled   on both, differing only in the body a recall emptied in PostgreSQL: expected,
 *                   since the relay publishes nothing for that change and the topic keeps the
 *                   original record until retention deletes it
 */
public record Comparison(List<Event> missing, List<Event> extra, List<Mismatch> mismatched, List<Recalled> recalled) {

    /** One (conv, seq) whose topic record and PostgreSQL row differ in {@code fields}. */
    public record Mismatch(Event topic, Event database, List<String> fields) {
    }

    /** A message or edit that PostgreSQL shows recalled (body emptied) while the topic still has its body. */
    public record Recalled(Event topic, Event database) {
    }

    /**
     * Whether two versions of one event differ only because one was taken after a recall emptied
     * the row: PostgreSQL shows it recalled, and the only difference is a body that one of them has
     * and the other has empty (the topic's record against the row, or an original record against one
     * a re-snapshot or backfill published later).
     */
    public static boolean emptiedByRecall(Event a, Event b, List<String> fields, Event database) {
        return database != null && database.recalled() && fields.equals(List.of("body"))
                && (a.body().isEmpty() || b.body().isEmpty());
    }

    /** Compares every conversation that appears on either side, in conversation then seq order. */
    public static Comparison of(Map<String, NavigableMap<Long, Event>> topic,
                                Map<String, NavigableMap<Long, Event>> database) {
        List<Event> missing = new ArrayList<>();
        List<Event> extra = new ArrayList<>();
        List<Mismatch> mismatched = new ArrayList<>();
        List<Recalled> recalled = new ArrayList<>();
        TreeSet<String> convs = new TreeSet<>(topic.keySet());
        convs.addAll(database.keySet());
        for (String conv : convs) {
            NavigableMap<Long, Event> t = topic.getOrDefault(conv, new TreeMap<>());
            NavigableMap<Long, Event> d = database.getOrDefault(conv, new TreeMap<>());
            for (Event e : d.values()) {
                Event onTopic = t.get(e.seq());
                if (onTopic == null) {
                    missing.add(e);
                } else {
                    List<String> fields = onTopic.differences(e);
                    if (emptiedByRecall(onTopic, e, fields, e)) {
                        recalled.add(new Recalled(onTopic, e));
                    } else if (!fields.isEmpty()) {
                        mismatched.add(new Mismatch(onTopic, e, fields));
                    }
                }
            }
            for (Event e : t.values()) {
                if (!d.containsKey(e.seq())) extra.add(e);
            }
        }
        return new Comparison(List.copyOf(missing), List.copyOf(extra), List.copyOf(mismatched), List.copyOf(recalled));
    }

    /** Whether the histories are the same but for recalled bodies still on the topic. */
    public boolean matches() {
        return missing.isEmpty() && extra.isEmpty() && mismatched.isEmpty();
    }
}
