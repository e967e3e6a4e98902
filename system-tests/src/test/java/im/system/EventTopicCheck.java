package im.system;

import im.topics.EventRecord;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * What the events topic holds for one conversation, read from the beginning of every partition to
 * the end: the events per seq after dedup by (conv, seq), and how many duplicates were absorbed.
 * A duplicate must be the same event (same mid): two different events under one seq is a fault.
 */
record EventTopicCheck(Map<Long, EventRecord> bySeq, int duplicates, List<String> conflicts) {

    static EventTopicCheck read(String bootstrap, String topic, String conv) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        Map<Long, EventRecord> bySeq = new TreeMap<>();
        List<String> conflicts = new ArrayList<>();
        int dups = 0;
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            List<TopicPartition> parts = c.partitionsFor(topic, Duration.ofSeconds(30)).stream()
                    .map(i -> new TopicPartition(topic, i.partition())).toList();
            c.assign(parts);
            c.seekToBeginning(parts);
            Map<TopicPartition, Long> end = new HashMap<>(c.endOffsets(parts, Duration.ofSeconds(30)));
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (parts.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
                if (System.nanoTime() > deadline) throw new AssertionError("could not read " + topic + " to its end " + end);
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    if (!conv.equals(r.key())) continue;
                    EventRecord e = EventRecord.read(r.value());
                    EventRecord prev = bySeq.putIfAbsent(e.seq(), e);
                    if (prev != null) {
                        dups++;
                        if (!prev.mid().equals(e.mid())) conflicts.add("seq " + e.seq() + ": " + prev.mid() + " and " + e.mid());
                    }
                }
            }
        }
        return new EventTopicCheck(bySeq, dups, conflicts);
    }

    /** The seqs of {@code expected} that are not on the topic. */
    Set<Long> missing(Set<Long> expected) {
        Set<Long> m = new TreeSet<>(expected);
        m.removeAll(bySeq.keySet());
        return m;
    }

    /** Whether the topic holds seqs 1..head with none missing. */
    boolean contiguousTo(long head) {
        for (long s = 1; s <= head; s++) if (!bySeq.containsKey(s)) return false;
        return true;
    }
}
