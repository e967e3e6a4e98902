package im.gateway;

import im.infra.config.ConfigException;
import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.kafka.KafkaClientConfig;
import im.infra.kafka.Replication;
import im.infra.kafka.TopicNames;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/** The gateway's settings, validated at start (see the README's settings table). */
public record GatewayConfig(
        String host,
        int port,
        String adminHost,
        int adminPort,
        String gatewayId,
        List<String> adminTokens,
        int adminBulkMax,
        int workerThreads,
        int maxInflight,
        int rateLimitPerSecond,
        Duration authTimeout,
        int outboundQueue,
        int connBufferBytes,
        Duration connStall,
        int connSendBuffer,
        int maxConnectionsPerAddress,
        int maxConnectionsPerUser,
        int maxConnectionsPerDevice,
        int authFailuresPerMinute,
        Duration wsIdle,
        Duration httpParseTimeout,
        Duration httpIdleTimeout,
        Optional<java.nio.file.Path> tlsCert,
        Optional<java.nio.file.Path> tlsKey,
        Optional<KafkaClientConfig> kafka,
        TopicNames topics,
        Duration heartbeat,
        Duration interestRenew,
        Duration ackBatchDelay,
        int ackBatchMax,
        int ackWriters,
        Duration ackThrottle,
        Duration readThrottle,
        Duration tokenTtl,
        int maxGroupMembers,
        Duration installCheck,
        Replication replication,
        int sendLanes,
        int sendBatchMax,
        Duration editWindow,
        Duration recallWindow,
        Duration typingInterval) {

    public static GatewayConfig from(Settings s) {
        List<String> admin = AdminTokens.parse(s.required(ConfigKeys.ADMIN_TOKEN));
        if (s.optional(ConfigKeys.TLS_CERT).isPresent() != s.optional(ConfigKeys.TLS_KEY).isPresent()) {
            throw new ConfigException(ConfigKeys.TLS_CERT.name(), "IM_TLS_CERT and IM_TLS_KEY go together: set both or neither");
        }
        String id = s.optional(ConfigKeys.GATEWAY_ID).orElse("gw-" + UUID.randomUUID().toString().substring(0, 8));
        if (!id.matches("[A-Za-z0-9._-]{1,64}")) {
            throw new ConfigException(ConfigKeys.GATEWAY_ID.name(), "must match [A-Za-z0-9._-]{1,64}");
        }
        return new GatewayConfig(
                s.string(ConfigKeys.GATEWAY_HOST),
                s.get(ConfigKeys.GATEWAY_PORT),
                s.string(ConfigKeys.ADMIN_HOST),
                s.get(ConfigKeys.ADMIN_PORT),
                id,
                admin,
                s.get(ConfigKeys.ADMIN_BULK_MAX),
                s.get(ConfigKeys.WORKER_THREADS),
                s.get(ConfigKeys.MAX_INFLIGHT),
                s.get(ConfigKeys.RATE_LIMIT),
                s.get(ConfigKeys.AUTH_TIMEOUT_MS),
                s.get(ConfigKeys.OUTBOUND_QUEUE),
                s.get(ConfigKeys.CONN_BUFFER_BYTES),
                s.get(ConfigKeys.CONN_STALL_MS),
                s.get(ConfigKeys.CONN_SEND_BUFFER_BYTES),
                s.get(ConfigKeys.MAX_CONNECTIONS_PER_ADDRESS),
                s.get(ConfigKeys.MAX_CONNECTIONS_PER_USER),
                s.get(ConfigKeys.MAX_CONNECTIONS_PER_DEVICE),
                s.get(ConfigKeys.AUTH_FAILURES_PER_MINUTE),
                s.get(ConfigKeys.WS_IDLE_MS),
                s.get(ConfigKeys.HTTP_PARSE_TIMEOUT_MS),
                s.get(ConfigKeys.HTTP_IDLE_TIMEOUT_MS),
                s.optional(ConfigKeys.TLS_CERT).map(java.nio.file.Path::of),
                s.optional(ConfigKeys.TLS_KEY).map(java.nio.file.Path::of),
                KafkaClientConfig.from(s),
                TopicNames.from(s),
                s.get(ConfigKeys.GATEWAY_HEARTBEAT_MS),
                s.get(ConfigKeys.INTEREST_RENEW_MS),
                s.get(ConfigKeys.ACK_BATCH_MS),
                s.get(ConfigKeys.ACK_BATCH_MAX),
                s.get(ConfigKeys.ACK_WRITERS),
                s.get(ConfigKeys.ACK_THROTTLE_MS),
                s.get(ConfigKeys.READ_THROTTLE_MS),
                s.get(ConfigKeys.TOKEN_TTL_S),
                s.get(ConfigKeys.MAX_GROUP_MEMBERS),
                // at most 1 s, so that a reinstall reaches open sockets within the documented 2 s
                s.get(ConfigKeys.INSTALL_CHECK_MS),
                Replication.from(s),
                s.get(ConfigKeys.SEND_LANES),
                s.get(ConfigKeys.SEND_BATCH_MAX),
                s.get(ConfigKeys.EDIT_WINDOW_S),
                s.get(ConfigKeys.RECALL_WINDOW_S),
                s.get(ConfigKeys.TYPING_INTERVAL_MS));
    }
}
