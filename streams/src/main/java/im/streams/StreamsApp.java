package im.streams;

import im.infra.kafka.KafkaClientConfig;
import im.infra.kafka.Replication;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.kafka.KafkaStreamsMetrics;
import java.time.Duration;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.Topology;
import org.slf4j.Logger;

/**
 * The started Kafka Streams application inside a Streams-based role (delivery node, sweeper):
 * the application id
 * {@code <prefix with '.' as '-'><role>}, {@link StreamsApps#properties}, failed threads replaced,
 * and the Streams client's metrics bound to the registry, tagged {@code group} with the
 * application (= consumer group) id.
 */
public record StreamsApp(KafkaStreams streams, KafkaStreamsMetrics metrics) implements AutoCloseable {

    public static StreamsApp start(String role, Topology topology, String topicPrefix, KafkaClientConfig kafka, String stateDir,
                                    Replication replication, MeterRegistry meters, Logger log) {
        String appId = topicPrefix.replace('.', '-') + role;
        KafkaStreams streams = new KafkaStreams(topology, StreamsApps.properties(appId, kafka, stateDir, replication));
        StreamsApps.replaceFailedThreads(streams, log, role);
        KafkaStreamsMetrics metrics = new KafkaStreamsMetrics(streams, Tags.of("group", appId));
        metrics.bindTo(meters);
        streams.start();
        return new StreamsApp(streams, metrics);
    }

    /** RUNNING: tasks assigned, stores restored. */
    public boolean isRunning() {
        return streams.state() == KafkaStreams.State.RUNNING;
    }

    @Override
    public void close() {
        metrics.close();
        streams.close(Duration.ofSeconds(10));
    }
}
