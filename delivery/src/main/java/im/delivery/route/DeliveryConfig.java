package im.delivery.route;

import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.kafka.KafkaClientConfig;
import im.infra.kafka.Replication;
import im.infra.kafka.TopicNames;
import java.time.Duration;

/** A delivery node's settings. */
public record DeliveryConfig(KafkaClientConfig kafka, TopicNames topics, Duration lease, Duration interestRenew, String stateDir,
                             Replication replication) {
    public static DeliveryConfig from(Settings s) {
        return new DeliveryConfig(KafkaClientConfig.required(s), TopicNames.from(s),
                s.get(ConfigKeys.GATEWAY_LEASE_MS),
                s.get(ConfigKeys.INTEREST_RENEW_MS), s.string(ConfigKeys.STATE_DIR), Replication.from(s));
    }
}
