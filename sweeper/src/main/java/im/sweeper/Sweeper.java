package im.sweeper;

import im.delivery.route.StreamsApps;
import java.time.Duration;
import java.util.concurrent.atomic.LongAdder;
import org.apache.kafka.streams.KafkaStreams;
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
        String appId = cfg.topics().prefix().replace('.', '-') + "sweeper";
        streams = new KafkaStreams(SweeperTopology.build(cfg.topics(), cfg.sweep(), cfg.backoff(), cfg.lease(), hints),
                StreamsApps.properties(appId, cfg.bootstrap(), cfg.stateDir()));
        StreamsApps.replaceFailedThreads(streams, log, "sweeper");
        streams.start();
        return this;
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
