package im.relay;

import im.infra.config.ConfigException;
import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.kafka.KafkaClientConfig;
import im.infra.kafka.Replication;
import java.time.Duration;

/**
 * The CDC relay's settings: where PostgreSQL and Kafka are (and how to authenticate to them), the slot, latency tuning, and how long
 * a silent lock holder keeps the lock ({@code lockTimeout}, see {@link CdcRelay}).
 *
 * @param pgUrl IM_PG_URL as given: {@code jdbc:postgresql://host[:port][,host[:port]...]/db[?...]};
 *              with several hosts the relay always connects to the primary among them (see {@link #jdbcUrl()})
 */
public record RelayConfig(
        String pgUrl, String database, String user, String password,
        KafkaClientConfig kafka, String slot, String publication, Duration pollInterval, Duration offsetFlush,
        Duration lockTimeout, Replication replication) {

    private static final String PREFIX = "jdbc:postgresql://";

    public static RelayConfig from(Settings s) {
        String url = s.required(ConfigKeys.PG_URL);
        if (!url.startsWith(PREFIX)) {
            throw new ConfigException(ConfigKeys.PG_URL.name(), "the relay needs jdbc:postgresql://host:port/db");
        }
        int slash = url.indexOf('/', PREFIX.length());
        if (slash < 0 || slash == PREFIX.length()) throw new ConfigException(ConfigKeys.PG_URL.name(), "names no host or no database");
        int q = url.indexOf('?', slash);
        String db = url.substring(slash + 1, q < 0 ? url.length() : q);
        if (db.isEmpty()) throw new ConfigException(ConfigKeys.PG_URL.name(), "names no database");
        String slot = s.string(ConfigKeys.RELAY_SLOT);
        if (!slot.matches("[a-z0-9_]{1,63}")) {
            throw new ConfigException(ConfigKeys.RELAY_SLOT.name(), "must match [a-z0-9_]{1,63} (a PostgreSQL slot name)");
        }
        return new RelayConfig(url, db,
                s.string(ConfigKeys.PG_USER), s.string(ConfigKeys.PG_PASSWORD),
                KafkaClientConfig.required(s), slot, slot,
                s.get(ConfigKeys.RELAY_POLL_MS),
                s.get(ConfigKeys.RELAY_OFFSET_FLUSH_MS),
                s.get(ConfigKeys.RELAY_LOCK_TIMEOUT_MS),
                Replication.from(s));
    }

    /**
     * The URL of the lock session. With several hosts, {@code targetServerType=primary} is added
     * unless the URL sets it: the lock, the slot and the WAL stream must all be on the primary, and
     * after a promotion the next session finds the new one.
     */
    String jdbcUrl() {
        String hosts = pgUrl.substring(PREFIX.length(), pgUrl.indexOf('/', PREFIX.length()));
        if (!hosts.contains(",") || pgUrl.contains("targetServerType=")) return pgUrl;
        return pgUrl + (pgUrl.contains("?") ? "&" : "?") + "targetServerType=primary";
    }
}
