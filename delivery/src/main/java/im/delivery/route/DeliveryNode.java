package im.delivery.route;

import im.infra.role.Role;
import im.streams.StreamsApp;
import io.micrometer.core.instrument.MeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One delivery node: the {@link DeliveryTopology} in a Kafka Streams application. Nodes with the
 * same topic prefix form one application; adding a node spreads the partitions, and when one
 * dies the others take its partitions over (state restored from the changelogs). The Streams
 * client's metrics (consumer lag {@code records-lag-max}, process rates, ...) are bound to the
 * given registry, tagged {@code group} with the application (= consumer group) id.
 */
public final class DeliveryNode implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(DeliveryNode.class);

    private final StreamsApp app;

    private DeliveryNode(StreamsApp app) {
        this.app = app;
    }

    /** Builds the topology of {@code cfg} and starts it; its meters go to {@code meters}. */
    public static DeliveryNode start(DeliveryConfig cfg, MeterRegistry meters) {
        return new DeliveryNode(StreamsApp.start("delivery", DeliveryTopology.build(cfg.topics(), cfg.lease(), cfg.interestRenew()),
                cfg.topics().prefix(), cfg.kafka(), cfg.stateDir(), cfg.replication(), meters, log));
    }

    /** A node as a role ({@code im delivery}): ready once Streams is RUNNING (tasks assigned, stores restored). */
    public static Role<DeliveryNode> role() {
        return Role.of("delivery", (s, meters) -> start(DeliveryConfig.from(s), meters), DeliveryNode::isRunning, node -> "");
    }

    /** Started and RUNNING (tasks assigned, stores restored). */
    public boolean isRunning() {
        return app.isRunning();
    }

    @Override
    public void close() {
        app.close();
    }
}
