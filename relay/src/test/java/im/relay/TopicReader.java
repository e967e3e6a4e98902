package im.relay;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.function.Predicate;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/** Reads a whole topic from the beginning (all partitions, no group) for assertions. */
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

    @Override
    public void close() {
        consumer.close();
    }
}
