package im.streams;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.util.Properties;
import im.infra.kafka.ConsumerDefaults;
import im.infra.kafka.KafkaClientConfig;
import im.infra.kafka.Replication;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.slf4j.Logger;

/** The Kafka Streams settings shared by the platform's Streams roles (delivery nodes, sweeper). */
public final class StreamsApps {
    private StreamsApps() {}

    /**
     * Settings for an interactive path: Streams defaults to linger.ms=100 and 30 s commits; pushes
     * and hints are latency-sensitive. A killed instance is noticed in 6 s instead of 45 s.
     *
     * @param stateDir the state directory, or empty for a fresh temporary one per start (reusing
     *                 one after the broker was recreated corrupts tasks)
     * @param replication of the internal (changelog, repartition) topics Streams creates
     * @param kafka the bootstrap and the client settings of IM_KAFKA_CONFIG_FILE, which Streams
     *              hands to each of its clients (producer, consumers, admin); these settings win
     */
    public static Properties properties(String applicationId, KafkaClientConfig kafka, String stateDir, Replication replication) {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.isEmpty() ? tempDir(applicationId) : stateDir);
        p.put(StreamsConfig.producerPrefix(ProducerConfig.LINGER_MS_CONFIG), "0");
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "200");
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), "6000");
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), "1500");
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG), ConsumerDefaults.FETCH_MAX_WAIT_MS);
        // Internal topics hold the stores' state: replicated as the platform's own topics are, and
        // written by an idempotent acks=all producer (the Kafka 4 defaults, stated so no one relaxes them).
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, Integer.toString(replication.factor()));
        p.put(StreamsConfig.topicPrefix("min.insync.replicas"), Integer.toString(replication.minInsyncReplicas()));
        p.put(StreamsConfig.producerPrefix(ProducerConfig.ACKS_CONFIG), "all");
        p.put(StreamsConfig.producerPrefix(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG), "true");
        return kafka.clientProperties(p);
    }

    /** A failed stream thread is logged and replaced rather than shutting the role down. */
    public static void replaceFailedThreads(KafkaStreams streams, Logger log, String role) {
        streams.setUncaughtExceptionHandler(e -> {
            log.error("{} stream thread failed; replacing it", role, e);
            return StreamThreadExceptionResponse.REPLACE_THREAD;
        });
    }

    private static String tempDir(String applicationId) {
        try {
            return Files.createTempDirectory("im-" + applicationId + "-").toString();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
