package im.gateway;

import im.infra.config.ConfigException;
import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.kafka.TopicNames;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;

/** The gateway's settings, validated at start (see the README's settings table). */
public record GatewayConfig(
        String host,
        int port,
        String gatewayId,
        String adminToken,
        int workerThreads,
        int maxInflight,
        int rateLimitPerSecond,
        Duration authTimeout,
        int outboundQueue,
        Optional<String> kafkaBootstrap,
        TopicNames topics,
        Duration heartbeat,
        Duration interestRenew,
        Duration ackBatchDelay,
        int ackBatchMax,
        int partitions,
        Duration tokenTtl,
        Duration installCheck) {

    public static GatewayConfig from(Settings s) {
        String admin = s.required(ConfigKeys.ADMIN_TOKEN);
        if (admin.length() < 16) throw new ConfigException(ConfigKeys.ADMIN_TOKEN.name(), "must be at least 16 characters");
        String id = s.optional(ConfigKeys.GATEWAY_ID).orElse("gw-" + UUID.randomUUID().toString().substring(0, 8));
        if (!id.matches("[A-Za-z0-9._-]{1,64}")) {
            throw new ConfigException(ConfigKeys.GATEWAY_ID.name(), "must match [A-Za-z0-9._-]{1,64}");
        }
        return new GatewayConfig(
                s.string(ConfigKeys.GATEWAY_HOST),
                s.intValue(ConfigKeys.GATEWAY_PORT, 0, 65535),
                id,
                admin,
                s.intValue(ConfigKeys.WORKER_THREADS, 1, 1024),
                s.intValue(ConfigKeys.MAX_INFLIGHT, 1, 10_000),
                s.intValue(ConfigKeys.RATE_LIMIT, 1, 1_000_000),
                s.millis(ConfigKeys.AUTH_TIMEOUT_MS, 100, 600_000),
                s.intValue(ConfigKeys.OUTBOUND_QUEUE, 1, 1_000_000),
                s.optional(ConfigKeys.KAFKA_BOOTSTRAP),
                TopicNames.from(s),
                s.millis(ConfigKeys.GATEWAY_HEARTBEAT_MS, 100, 60_000),
                s.millis(ConfigKeys.INTEREST_RENEW_MS, 200, 600_000),
                s.millis(ConfigKeys.ACK_BATCH_MS, 0, 100),
                s.intValue(ConfigKeys.ACK_BATCH_MAX, 1, 10_000),
                s.intValue(ConfigKeys.PARTITIONS, 1, 10_000),
                Duration.ofSeconds(s.longValue(ConfigKeys.TOKEN_TTL_S, 0, 100L * 365 * 86_400)),
                // at most 1 s, so that a reinstall reaches open sockets within the documented 2 s
                s.millis(ConfigKeys.INSTALL_CHECK_MS, 100, 1000));
    }
}
