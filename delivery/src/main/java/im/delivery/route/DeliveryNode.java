package im.delivery.route;

import im.infra.role.RoleRuntime;
import im.streams.StreamsComponent;
import im.streams.StreamsRole;
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
public final class DeliveryNode extends StreamsComponent<DeliveryNode> {
    private static final Logger log = LoggerFactory.getLogger(DeliveryNode.class);

    private final DeliveryConfig cfg;

    public DeliveryNode(DeliveryConfig cfg, MeterRegistry meters) {
        super(meters);
        this.cfg = cfg;
    }

    /** A node as a role ({@code im delivery}): ready once Streams is RUNNING (tasks assigned, stores restored). */
    public static RoleRuntime role() {
        return RoleRuntime.of("delivery", (s, meters) -> new DeliveryNode(DeliveryConfig.from(s), meters).start(),
                DeliveryNode::isRunning, node -> "");
    }

    @Override
    protected StreamsRole startStreams() {
        return StreamsRole.start("delivery", DeliveryTopology.build(cfg.topics(), cfg.lease(), cfg.interestRenew()), cfg.topics().prefix(),
                cfg.kafka(), cfg.stateDir(), cfg.replication(), meters, log);
    }
}
