package im.sweeper;

import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.kafka.KafkaClientConfig;
import im.infra.kafka.Replication;
import im.infra.kafka.TopicNames;
import java.time.Duration;

/**
 * The sweeper's settings: Kafka (bootstrap and client settings), topic names, the sweep interval (also how long a cursor may lag
 * before a hint), the hint back-off, the gateway lease, the gateways' ack throttle (a cursor is
 * reported at most that often, so a spell gets that much longer before it is due) and the Streams
 * state directory.
 */
public record SweeperConfig(KafkaClientConfig kafka, TopicNames topics, Duration sweep, Duration backoff, Duration lease,
                            Duration interestRenew, Duration ackThrottle, String stateDir, Replication replication) {
    public static SweeperConfig from(Settings s) {
        return new SweeperConfig(KafkaClientConfig.required(s), TopicNames.from(s),
                s.get(ConfigKeys.SWEEP_MS),
                s.get(ConfigKeys.HINT_BACKOFF_MS),
                s.get(ConfigKeys.GATEWAY_LEASE_MS),
                s.get(ConfigKeys.INTEREST_RENEW_MS),
                s.get(ConfigKeys.ACK_THROTTLE_MS),
                s.string(ConfigKeys.STATE_DIR),
                Replication.from(s));
    }
}
