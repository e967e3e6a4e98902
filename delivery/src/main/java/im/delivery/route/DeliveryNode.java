package im.delivery.route;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One delivery node: the {@link DeliveryTopology} in a Kafka Streams application. Nodes with the
 * same topic prefix form one application; adding a node spreads the partitions, and when one
 * dies the others take its partitions over (state restored from the changelogs).
 */
public final class DeliveryNode implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(DeliveryNode.class);

    private final DeliveryConfig cfg;
    private KafkaStreams streams;

    public DeliveryNode(DeliveryConfig cfg) {
        this.cfg = cfg;
    }

    public DeliveryNode start() {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, cfg.topics().prefix().replace('.', '-') + "delivery");
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, cfg.bootstrap());
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir());
        // Latency: Streams defaults to linger.ms=100 and 30 s commits; pushes are interactive.
        p.put(StreamsConfig.producerPrefix(ProducerConfig.LINGER_MS_CONFIG), "0");
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "200");
        // A killed instance is noticed in 6 s instead of the default 45 s, so its tasks move soon.
        p.put(StreamsConfig.consumerPrefix(org.apache.kafka.clients.consumer.ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), "6000");
        p.put(StreamsConfig.consumerPrefix(org.apache.kafka.clients.consumer.ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), "1500");
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG), "50");
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "-1");   // the broker's default
        streams = new KafkaStreams(DeliveryTopology.build(cfg.topics(), cfg.lease()), p);
        streams.setUncaughtExceptionHandler(e -> {
            log.error("delivery stream thread failed; replacing it", e);
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        streams.start();
        return this;
    }

    private String stateDir() {
        if (!cfg.stateDir().isEmpty()) return cfg.stateDir();
        try {
            // A fresh directory per start: reusing one after the broker was recreated corrupts tasks.
            return Files.createTempDirectory("im-delivery-").toString();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public boolean isRunning() {
        return streams != null && streams.state() == KafkaStreams.State.RUNNING;
    }

    public KafkaStreams.State state() {
        return streams.state();
    }

    @Override
    public void close() {
        if (streams != null) streams.close(Duration.ofSeconds(10));
    }
}
