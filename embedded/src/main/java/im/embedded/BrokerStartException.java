package im.embedded;

/**
 * A broker did not become ready: it failed to start, its process died, or it did not answer
 * {@code describeCluster} before the deadline. Fatal for the caller; the message says which and
 * where to look (the broker log file for a {@link KafkaBrokerProcess}).
 */
public final class BrokerStartException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public BrokerStartException(String message) {
        super(message);
    }

    public BrokerStartException(String message, Throwable cause) {
        super(message, cause);
    }
}
