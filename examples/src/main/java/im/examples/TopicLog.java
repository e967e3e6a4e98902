package im.examples;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * The conversation histories rebuilt from {@code <prefix>events} records, in any order of
 * arrival. The topic is at-least-once, so the same (conv, seq) can arrive more than once: the
 * first record is kept, an identical one is counted as a duplicate, a different one is a
 * conflict (a relay replay never changes an event, so that is corrupt data). Pure: no I/O.
 */
public final class TopicLog {
    /** Where a record was read: partition and offset. */
    public record Position(int partition, long offset) {
        @Override
        public String toString() {
            return "partition " + partition + " offset " + offset;
        }
    }

    /** An event as kept, with the position of its first record. */
    public record Entry(Event event, Position at) {
    }

    /** Two records with the same (conv, seq) and different content. */
    public record Conflict(Entry kept, Entry other, List<String> fields) {
    }

    /** A record that could not be read as a version-1 event. */
    public record Malformed(Position at, String key, String reason) {
    }

    /** A run of seqs absent from the topic, between 1 and the highest seq read. */
    public record Gap(String conv, long from, long to) {
    }

    private static final ObjectMapper JSON = new ObjectMapper();

    private final Map<String, NavigableMap<Long, Entry>> byConv = new TreeMap<>();
    private final List<Conflict> conflicts = new ArrayList<>();
    private final List<Malformed> malformed = new ArrayList<>();
    private long records;
    private long duplicates;

    /** Adds one record as read from the topic. */
    public void add(String key, String value, int partition, long offset) {
        records++;
        Position at = new Position(partition, offset);
        Event e;
        try {
            e = Event.fromJson(key, value == null ? null : JSON.readTree(value));
        } catch (JsonProcessingException ex) {
            // Jackson's message ends with where an unclosed value started, which says nothing here.
            String why = ex.getOriginalMessage().replaceAll(" \\(start marker at .*\\)$", "");
            malformed.add(new Malformed(at, key, "not JSON: " + why));
            return;
        } catch (Event.BadRecordException ex) {
            malformed.add(new Malformed(at, key, ex.getMessage()));
            return;
        }
        NavigableMap<Long, Entry> log = byConv.computeIfAbsent(e.conv(), c -> new TreeMap<>());
        Entry kept = log.putIfAbsent(e.seq(), new Entry(e, at));
        if (kept == null) return;
        duplicates++;
        List<String> fields = kept.event().differences(e);
        if (!fields.isEmpty()) conflicts.add(new Conflict(kept, new Entry(e, at), fields));
    }

    /** Every conversation's events by seq (duplicates dropped), conversations in name order. */
    public Map<String, NavigableMap<Long, Event>> events() {
        Map<String, NavigableMap<Long, Event>> out = new TreeMap<>();
        byConv.forEach((conv, log) -> {
            NavigableMap<Long, Event> events = new TreeMap<>();
            log.forEach((seq, entry) -> events.put(seq, entry.event()));
            out.put(conv, events);
        });
        return out;
    }

    /** Whether the topic held this (conv, seq). */
    public boolean contains(String conv, long seq) {
        NavigableMap<Long, Entry> log = byConv.get(conv);
        return log != null && log.containsKey(seq);
    }

    /** Where the kept record of (conv, seq) was read, or null. */
    public Position positionOf(String conv, long seq) {
        NavigableMap<Long, Entry> log = byConv.get(conv);
        Entry e = log == null ? null : log.get(seq);
        return e == null ? null : e.at();
    }

    /**
     * Seqs missing from the topic's log of each conversation: the log is gap-free from 1, so a
     * hole means missing data. A gap starting at 1 often means retention deleted the oldest events.
     */
    public List<Gap> gaps() {
        List<Gap> out = new ArrayList<>();
        byConv.forEach((conv, log) -> {
            long expected = 1;
            for (long seq : log.keySet()) {
                if (seq > expected) out.add(new Gap(conv, expected, seq - 1));
                expected = seq + 1;
            }
        });
        return out;
    }

    public long records() {
        return records;
    }

    /** Records dropped because their (conv, seq) had been read already, identical or not. */
    public long duplicates() {
        return duplicates;
    }

    public List<Conflict> conflicts() {
        return Collections.unmodifiableList(conflicts);
    }

    public List<Malformed> malformed() {
        return Collections.unmodifiableList(malformed);
    }
}
