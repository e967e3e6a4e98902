package im.delivery.route;

import java.time.Duration;
import org.apache.kafka.streams.KafkaStreams;
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
        String appId = cfg.topics().prefix().replace('.', '-') + "delivery";
        streams = new KafkaStreams(DeliveryTopology.build(cfg.topics(), cfg.lease()),
                StreamsApps.properties(appId, cfg.bootstrap(), cfg.stateDir()));
        StreamsApps.replaceFailedThreads(streams, log, "delivery");
        streams.start();
        return this;
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
