package im.examples;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.utils.Utils;

/**
 * Reads {@code <prefix>events} from the beginning into a {@link TopicLog}, without a consumer
 * group (assign + seek), so it commits nothing and disturbs no one. With a conversation id it
 * reads only that conversation's partition: records are keyed by conversation and placed by
 * Kafka's default partitioner, {@code murmur2(key) mod partitions}.
 */
public final class EventTopicReader implements AutoCloseable {
    private final KafkaConsumer<String, String> consumer;
    private final List<TopicPartition> partitions;
    private final int partitionCount;
    private final String conv;

    /**
     * @param client  Kafka client properties (security), under the reader's own
     * @param conv    only this conversation's records, or null for all
     * @param timeout bound of every single metadata call (an unreachable broker fails within it)
     * @throws IllegalStateException if the topic does not exist
     */
    public EventTopicReader(String bootstrap, Properties client, String topic, String conv, Duration timeout) {
        Properties p = new Properties();
        p.putAll(client);
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "history-rebuild");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");   // no group: nothing to commit
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, Long.toString(timeout.toMillis()));
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, Long.toString(Math.max(1000, timeout.toMillis() / 2)));
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        this.consumer = new KafkaConsumer<>(p);
        this.conv = conv;
        try {
            List<PartitionInfo> infos = consumer.partitionsFor(topic, timeout);
            if (infos == null || infos.isEmpty()) {
                throw new IllegalStateException("topic " + topic + " does not exist on " + bootstrap);
            }
            this.partitionCount = infos.size();
            List<TopicPartition> all = new ArrayList<>();
            for (PartitionInfo i : infos) all.add(new TopicPartition(topic, i.partition()));
            this.partitions = conv == null ? all : List.of(new TopicPartition(topic, partitionOf(conv, partitionCount)));
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
        } catch (RuntimeException e) {
            consumer.close(CloseOptions.timeout(Duration.ZERO));
            throw e;
        }
    }

    /** The partition Kafka's default partitioner gives a record with this key. */
    public static int partitionOf(String key, int partitions) {
        return Utils.toPositive(Utils.murmur2(key.getBytes(StandardCharsets.UTF_8))) % partitions;
    }

    public List<TopicPartition> partitions() {
        return partitions;
    }

    public int partitionCount() {
        return partitionCount;
    }

    /**
     * Partitions whose first offset is above 0: retention (or a delete-records call) removed
     * their oldest records, so events older than those are not on the topic any more.
     */
    public Map<TopicPartition, Long> truncatedPartitions() {
        Map<TopicPartition, Long> first = new TreeMap<>(Comparator.comparingInt(TopicPartition::partition));
        consumer.beginningOffsets(partitions).forEach((tp, offset) -> {
            if (offset > 0) first.put(tp, offset);
        });
        return first;
    }

    /**
     * Captures the end offsets now and reads until every partition's position reaches them. It
     * terminates even while producers keep writing; records written later may be read too.
     *
     * @return the number of records read
     * @throws TimeoutException if the end offsets were not reached before the deadline
     */
    public long readToEnd(TopicLog log, long deadlineNanos) throws TimeoutException {
        Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
        long read = 0;
        while (!reached(end)) {
            long left = deadlineNanos - System.nanoTime();
            if (left <= 0) {
                throw new TimeoutException("read " + read + " records, but the end offsets " + end
                        + " were not reached in time (positions " + positions() + ")");
            }
            read += poll(log, Duration.ofNanos(Math.min(left, Duration.ofMillis(200).toNanos())));
        }
        return read;
    }

    /** One poll: adds what arrives within {@code wait} to the log; returns the number of records. */
    public long poll(TopicLog log, Duration wait) {
        long n = 0;
        for (ConsumerRecord<String, String> r : consumer.poll(wait)) {
            n++;
            // A partition holds many conversations: keep only the one asked for.
            if (conv == null || conv.equals(r.key())) log.add(r.key(), r.value(), r.partition(), r.offset());
        }
        return n;
    }

    private boolean reached(Map<TopicPartition, Long> end) {
        for (TopicPartition tp : partitions) {
            if (consumer.position(tp) < end.get(tp)) return false;
        }
        return true;
    }

    private Map<Integer, Long> positions() {
        Map<Integer, Long> out = new TreeMap<>();
        for (TopicPartition tp : partitions) out.put(tp.partition(), consumer.position(tp));
        return out;
    }

    @Override
    public void close() {
        consumer.close(CloseOptions.timeout(Duration.ofSeconds(5)));
    }
}
