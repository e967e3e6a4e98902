package im.embedded;

import java.nio.file.Path;

/**
 * The lifecycle the brokers of this package share: a broker (or cluster) on this machine whose
 * data lives in one directory, stopped once by {@link #close()}, which then deletes that directory
 * unless the caller asked to keep it. A start that fails closes with {@link #closeKeepingData()}
 * where the directory holds the logs that say why.
 */
abstract class LocalBroker implements KafkaBroker {
    final Path dataDir;
    private final boolean deleteOnClose;
    private boolean closed;

    LocalBroker(Path dataDir, boolean deleteOnClose) {
        this.dataDir = dataDir;
        this.deleteOnClose = deleteOnClose;
    }

    /** Stops the broker; called once, by the first close. */
    abstract void stop();

    /**
     * Stops the broker, then deletes its data directory unless it is kept; idempotent. Not
     * final: javac then gives each public subclass a public bridge of it, without which a method
     * reference such as {@code KafkaCluster::close} in another package fails at run time
     * ("MethodHandle ... is not direct or cannot be cracked", CampaignIT).
     */
    @Override
    public void close() {
        close(deleteOnClose);
    }

    /** As {@link #close()}, but keeps the data directory in any case. */
    final void closeKeepingData() {
        close(false);
    }

    final synchronized boolean isClosed() {
        return closed;
    }

    private synchronized void close(boolean delete) {
        if (closed) {
            return;
        }
        closed = true;
        try {
            stop();
        } finally {
            if (delete) {
                BrokerSettings.deleteRecursively(dataDir);
            }
        }
    }
}
