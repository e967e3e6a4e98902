package im.relay;

import im.infra.config.ConfigException;
import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.kafka.Replication;
import java.net.URI;
import java.time.Duration;

/**
 * The CDC relay's settings: where PostgreSQL and Kafka are, the slot, latency tuning, and how long
 * a silent lock holder keeps the lock ({@code lockTimeout}, see {@link CdcRelay}).
 */
public record RelayConfig(
        String pgHost, int pgPort, String database, String user, String password,
        String kafkaBootstrap, String slot, String publication, Duration pollInterval, Duration offsetFlush,
        Duration lockTimeout, Replication replication) {

    public static RelayConfig from(Settings s) {
        String url = s.required(ConfigKeys.PG_URL);
        if (!url.startsWith("jdbc:postgresql://")) {
            throw new ConfigException(ConfigKeys.PG_URL.name(), "the relay needs jdbc:postgresql://host:port/db");
        }
        URI u = URI.create(url.substring("jdbc:".length()));
        String db = u.getPath().replaceFirst("^/", "");
        if (db.isEmpty()) throw new ConfigException(ConfigKeys.PG_URL.name(), "names no database");
        String slot = s.string(ConfigKeys.RELAY_SLOT);
        if (!slot.matches("[a-z0-9_]{1,63}")) {
            throw new ConfigException(ConfigKeys.RELAY_SLOT.name(), "must match [a-z0-9_]{1,63} (a PostgreSQL slot name)");
        }
        return new RelayConfig(u.getHost(), u.getPort() < 0 ? 5432 : u.getPort(), db,
                s.string(ConfigKeys.PG_USER), s.string(ConfigKeys.PG_PASSWORD),
                s.required(ConfigKeys.KAFKA_BOOTSTRAP), slot, slot,
                s.get(ConfigKeys.RELAY_POLL_MS),
                s.get(ConfigKeys.RELAY_OFFSET_FLUSH_MS),
                s.get(ConfigKeys.RELAY_LOCK_TIMEOUT_MS),
                Replication.from(s));
    }

    String jdbcUrl() {
        return "jdbc:postgresql://" + pgHost + ":" + pgPort + "/" + database;
    }
}
