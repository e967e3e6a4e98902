package im.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.Predicate;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Reads a whole topic from the beginning (all partitions, no group) for assertions, and checks
 * what the relay published there.
 */
final class TopicReader implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final KafkaConsumer<String, String> consumer;
    final List<ConsumerRecord<String, String>> records = new ArrayList<>();

    TopicReader(String bootstrap, String topic) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        consumer = new KafkaConsumer<>(p);
        List<TopicPartition> parts = new ArrayList<>();
        consumer.partitionsFor(topic, Duration.ofSeconds(30)).forEach(i -> parts.add(new TopicPartition(topic, i.partition())));
        consumer.assign(parts);
        consumer.seekToBeginning(parts);
    }

    /** Polls until the predicate holds over everything read so far, or fails after the timeout. */
    List<ConsumerRecord<String, String>> readUntil(Duration timeout, Predicate<List<ConsumerRecord<String, String>>> done) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!done.test(records)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("topic did not reach the expected state within " + timeout + "; read " + records.size());
            }
            consumer.poll(Duration.ofMillis(200)).forEach(records::add);
        }
        return records;
    }

    static JsonNode json(ConsumerRecord<String, String> r) {
        try {
            return JSON.readTree(r.value());
        } catch (Exception e) {
            throw new AssertionError("not JSON: " + r.value(), e);
        }
    }

    /**
     * Checks the topic holds every seq 1..head of each conversation, in order once duplicates
     * (replays after a restart) are dropped by (conv, seq); returns the number of duplicates.
     */
    static int assertCompleteAndOrdered(List<ConsumerRecord<String, String>> records, Map<String, Long> heads) {
        Map<String, Long> max = new HashMap<>();
        int dups = 0;
        for (ConsumerRecord<String, String> r : records) {
            JsonNode v = json(r);
            String conv = v.get("conv").asText();
            assertEquals(conv, r.key(), "keyed by conversation");
            long seq = v.get("seq").asLong();
            long seen = max.getOrDefault(conv, 0L);
            if (seq <= seen) {
                dups++;
                continue;
            }
            assertEquals(seen + 1, seq, "conv " + conv + ": after " + seen + " came " + seq + " (a gap or reordering)");
            max.put(conv, seq);
        }
        assertEquals(heads, max, "every committed event is on the topic");
        return dups;
    }

    static boolean reached(List<ConsumerRecord<String, String>> records, Map<String, Long> heads) {
        Map<String, Long> max = new HashMap<>();
        for (ConsumerRecord<String, String> r : records) {
            JsonNode v = json(r);
            max.merge(v.get("conv").asText(), v.get("seq").asLong(), Math::max);
        }
        return max.equals(heads);
    }

    /** The relay instance that sent a record (its {@link CdcRelay#INSTANCE_HEADER}). */
    static String publisher(ConsumerRecord<String, String> r) {
        Header h = r.headers().lastHeader(CdcRelay.INSTANCE_HEADER);
        if (h == null) throw new AssertionError("record without " + CdcRelay.INSTANCE_HEADER + ": " + r);
        return new String(h.value(), StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        consumer.close();
    }
}
