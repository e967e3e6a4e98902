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
 */
public record Comparison(List<Event> missing, List<Event> extra, List<Mismatch> mismatched) {

    /** One (conv, seq) whose topic record and PostgreSQL row differ in {@code fields}. */
    public record Mismatch(Event topic, Event database, List<String> fields) {
    }

    /** Compares every conversation that appears on either side, in conversation then seq order. */
    public static Comparison of(Map<String, NavigableMap<Long, Event>> topic,
                                Map<String, NavigableMap<Long, Event>> database) {
        List<Event> missing = new ArrayList<>();
        List<Event> extra = new ArrayList<>();
        List<Mismatch> mismatched = new ArrayList<>();
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
                    if (!fields.isEmpty()) mismatched.add(new Mismatch(onTopic, e, fields));
                }
            }
            for (Event e : t.values()) {
                if (!d.containsKey(e.seq())) extra.add(e);
            }
        }
        return new Comparison(List.copyOf(missing), List.copyOf(extra), List.copyOf(mismatched));
    }

    public boolean matches() {
        return missing.isEmpty() && extra.isEmpty() && mismatched.isEmpty();
    }
}
