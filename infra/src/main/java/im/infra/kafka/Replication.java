package im.infra.kafka;

import im.infra.config.ConfigException;
import im.infra.config.ConfigKeys;
import im.infra.config.Settings;

/**
 * How every topic the platform creates is replicated (IM_REPLICATION_FACTOR): {@code factor}
 * replicas, and {@code min.insync.replicas} one less (at least 1), so that with 3 an acknowledged
 * ({@code acks=all}) record is on at least 2 brokers and one broker may be down without stopping
 * writes. The single-node default is 1/1.
 */
public record Replication(int factor) {
    public static final Replication SINGLE = new Replication(1);

    public Replication {
        if (factor < 1 || factor > Short.MAX_VALUE) {
            throw new ConfigException(ConfigKeys.REPLICATION_FACTOR.name(), "must be between 1 and " + Short.MAX_VALUE + ", got " + factor);
        }
    }

    public static Replication from(Settings s) {
        return new Replication(s.get(ConfigKeys.REPLICATION_FACTOR));
    }

    /** The topic-level {@code min.insync.replicas}. */
    public int minInsyncReplicas() {
        return Math.max(1, factor - 1);
    }

    /**
     * Refuses a factor above the cluster's registered brokers, naming the key: Kafka would refuse
     * the topics anyway, with a message that does not say which setting to change.
     */
    void checkFits(int brokers, String bootstrap) {
        if (factor > brokers) {
            throw new ConfigException(ConfigKeys.REPLICATION_FACTOR.name(), "is " + factor + ", but the cluster at "
                    + bootstrap + " has " + brokers + " registered broker" + (brokers == 1 ? "" : "s"));
        }
    }
}
