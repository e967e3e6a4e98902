package im.streams;

import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.streams.KafkaStreams;

/**
 * A role that runs one Kafka Streams application (a delivery node, a sweeper): built with its
 * configuration and meter registry, {@link #start started} once, running until {@link #close closed}.
 *
 * @param <S> the role's own type, returned by {@link #start} so a caller can write {@code new X(cfg, meters).start()}
 */
public abstract class StreamsComponent<S extends StreamsComponent<S>> implements AutoCloseable {
    protected final MeterRegistry meters;
    private volatile StreamsRole streams;

    protected StreamsComponent(MeterRegistry meters) {
        this.meters = meters;
    }

    /** Builds this role's topology and starts it with {@link StreamsRole#start}. */
    protected abstract StreamsRole startStreams();

    @SuppressWarnings("unchecked")
    public final S start() {
        streams = startStreams();
        return (S) this;
    }

    /** Started and RUNNING (tasks assigned, stores restored). */
    public final boolean isRunning() {
        StreamsRole s = streams;
        return s != null && s.isRunning();
    }

    public final KafkaStreams.State state() {
        return streams.streams().state();
    }

    /** The running application, or null before {@link #start}. */
    protected final StreamsRole streams() {
        return streams;
    }

    @Override
    public void close() {
        StreamsRole s = streams;
        if (s != null) s.close();
    }
}
