package im.delivery.route;

import im.infra.ops.Metrics;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.kafka.KafkaStreamsMetrics;
import java.time.Duration;
import org.apache.kafka.streams.KafkaStreams;
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

    private final DeliveryConfig cfg;
    private final MeterRegistry meters;
    private KafkaStreams streams;
    private KafkaStreamsMetrics streamsMetrics;

    public DeliveryNode(DeliveryConfig cfg) {
        this(cfg, Metrics.detached());
    }

    public DeliveryNode(DeliveryConfig cfg, MeterRegistry meters) {
        this.cfg = cfg;
        this.meters = meters;
    }

    public DeliveryNode start() {
        String appId = cfg.topics().prefix().replace('.', '-') + "delivery";
        streams = new KafkaStreams(DeliveryTopology.build(cfg.topics(), cfg.lease()),
                StreamsApps.properties(appId, cfg.bootstrap(), cfg.stateDir()));
        StreamsApps.replaceFailedThreads(streams, log, "delivery");
        streamsMetrics = new KafkaStreamsMetrics(streams, Tags.of("group", appId));
        streamsMetrics.bindTo(meters);
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
        if (streamsMetrics != null) streamsMetrics.close();
        if (streams != null) streams.close(Duration.ofSeconds(10));
    }
}
