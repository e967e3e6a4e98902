package im.embedded;

/**
 * A running Kafka broker that clients can reach. Implementations own the broker's lifecycle:
 * {@link #close()} stops it and releases its ports. Two kinds exist: {@link EmbeddedKafkaBroker}
 * (in this JVM, fastest to start) and {@link KafkaBrokerProcess} (a child JVM that a fault test
 * can kill with SIGKILL and restart on the same port and data).
 */
public interface KafkaBroker extends AutoCloseable {

    /** The {@code bootstrap.servers} value for clients, e.g. {@code 127.0.0.1:40123}. */
    String bootstrapServers();

    /** Stops the broker; idempotent. Does not throw checked exceptions. */
    @Override
    void close();
}
