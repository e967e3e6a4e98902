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
 * once. A caller passes only the settings particular to it, which win over these; both are laid
 * over the client settings of IM_KAFKA_CONFIG_FILE ({@link KafkaClientConfig}).
 */
public final class KafkaClients {
    private KafkaClients() {}

    /**
     * A consumer that joins no group and commits nothing (auto commit off): the caller assigns
     * partitions and seeks, and so disturbs no group.
     */
    public static KafkaConsumer<String, String> assignedConsumer(KafkaClientConfig kafka, Map<String, Object> extra) {
        Map<String, Object> p = new HashMap<>();
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.putAll(extra);
        return new KafkaConsumer<>(kafka.clientProperties(p), new StringDeserializer(), new StringDeserializer());
    }

    /** An idempotent producer that waits for every in-sync replica ({@code acks=all}). */
    public static KafkaProducer<String, String> durableProducer(KafkaClientConfig kafka, Map<String, Object> extra) {
        Map<String, Object> p = new HashMap<>();
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.putAll(extra);
        return new KafkaProducer<>(kafka.clientProperties(p), new StringSerializer(), new StringSerializer());
    }
}
