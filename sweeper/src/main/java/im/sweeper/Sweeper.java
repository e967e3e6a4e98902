package im.sweeper;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.atomic.LongAdder;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link SweeperTopology} in a Kafka Streams application. Instances with the same topic
 * prefix form one application: a second instance takes over partitions (and their lagging pairs,
 * restored from the changelogs) when one dies, so hints continue without a database rescan.
 */
public final class Sweeper implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Sweeper.class);

    private final SweeperConfig cfg;
    private final LongAdder hints = new LongAdder();
    private KafkaStreams streams;

    public Sweeper(SweeperConfig cfg) {
        this.cfg = cfg;
    }

    public Sweeper start() {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, cfg.topics().prefix().replace('.', '-') + "sweeper");
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, cfg.bootstrap());
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir());
        // Latency: Streams defaults to linger.ms=100 and 30 s commits; a hint repairs a lost push.
        p.put(StreamsConfig.producerPrefix(ProducerConfig.LINGER_MS_CONFIG), "0");
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "200");
        // A killed instance is noticed in 6 s instead of the default 45 s, so its tasks move soon.
        p.put(StreamsConfig.consumerPrefix(org.apache.kafka.clients.consumer.ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), "6000");
        p.put(StreamsConfig.consumerPrefix(org.apache.kafka.clients.consumer.ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), "1500");
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG), "50");
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "-1");   // the broker's default
        streams = new KafkaStreams(SweeperTopology.build(cfg.topics(), cfg.sweep(), cfg.backoff(), cfg.lease(), hints), p);
        streams.setUncaughtExceptionHandler(e -> {
            log.error("sweeper stream thread failed; replacing it", e);
            return StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        streams.start();
        return this;
    }

    private String stateDir() {
        if (!cfg.stateDir().isEmpty()) return cfg.stateDir();
        try {
            // A fresh directory per start: reusing one after the broker was recreated corrupts tasks.
            return Files.createTempDirectory("im-sweeper-").toString();
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

    /** Device hints emitted by this instance since start (a hint to n devices counts n). */
    public long hintsEmitted() {
        return hints.sum();
    }

    @Override
    public void close() {
        if (streams != null) streams.close(Duration.ofSeconds(10));
    }
}
