package im.infra.kafka;

import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The plain Kafka clients (outside Kafka Streams) of the roles and tools: String keys and values
 * (every topic of ours carries JSON text), and what all such clients of one kind share, stated
 * once. A caller passes only the settings particular to it, which win over these.
 */
public final class KafkaClients {
    private KafkaClients() {}

    /**
     * A consumer that joins no group and commits nothing (auto commit off): the caller assigns
     * partitions and seeks, and so disturbs no group.
     */
    public static KafkaConsumer<String, String> assignedConsumer(String bootstrap, Map<String, Object> extra) {
        Map<String, Object> p = new HashMap<>();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.putAll(extra);
        return new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
    }

    /** An idempotent producer that waits for every in-sync replica ({@code acks=all}). */
    public static KafkaProducer<String, String> durableProducer(String bootstrap, Map<String, Object> extra) {
        Map<String, Object> p = new HashMap<>();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.putAll(extra);
        return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
    }
}
