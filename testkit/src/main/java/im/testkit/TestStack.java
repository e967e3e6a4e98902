package im.testkit;

import im.embedded.EmbeddedPg;
import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.db.DbConfig;
import java.util.HashMap;
import java.util.Map;
import javax.sql.DataSource;

/**
 * What a test gets from {@link ImStackExtension}: its own freshly migrated database on the shared
 * PostgreSQL, a unique topic prefix on the shared Kafka broker, and {@link Settings} that point
 * a role (in-process or a child JVM) at exactly these.
 */
public final class TestStack {
    private final SharedStack shared;
    private final String database;
    private final String topicPrefix;
    private final DataSource dataSource;

    TestStack(SharedStack shared, String database, String topicPrefix, DataSource dataSource) {
        this.shared = shared;
        this.database = database;
        this.topicPrefix = topicPrefix;
        this.dataSource = dataSource;
    }

    public String database() {
        return database;
    }

    public String jdbcUrl() {
        return shared.jdbcUrl(database);
    }

    public DbConfig dbConfig(int poolSize) {
        return new DbConfig(jdbcUrl(), shared.pgUser(), shared.pgPassword(), poolSize);
    }

    /** A small pool on this test's database, closed after the test. */
    public DataSource dataSource() {
        return dataSource;
    }

    /** Unique per test, e.g. {@code t7.}; topics are {@code <prefix>events} and so on. */
    public String topicPrefix() {
        return topicPrefix;
    }

    /** Starts the shared broker on first use. */
    public String kafkaBootstrap() {
        return shared.kafkaBootstrap();
    }

    /** The embedded server, for tests that stop or crash it; null when an external one is used. */
    public EmbeddedPg embeddedPg() {
        return shared.embeddedPg();
    }

    /** Settings for a role under test: this database, (if started) Kafka, and the given extras. */
    public Settings settings(Map<String, String> extra) {
        Map<String, String> m = new HashMap<>();
        m.put(ConfigKeys.PG_URL.name(), jdbcUrl());
        m.put(ConfigKeys.PG_USER.name(), shared.pgUser());
        m.put(ConfigKeys.PG_PASSWORD.name(), shared.pgPassword());
        m.put(ConfigKeys.PG_POOL_SIZE.name(), "8");
        m.put(ConfigKeys.TOPIC_PREFIX.name(), topicPrefix);
        m.put(ConfigKeys.OPS_PORT.name(), "0");   // roles run side by side in tests: never contend for 9090
        m.put(ConfigKeys.ADMIN_PORT.name(), "0");   // nor gateways for 8081
        if (shared.kafkaStarted()) m.put(ConfigKeys.KAFKA_BOOTSTRAP.name(), shared.kafkaBootstrap());
        m.putAll(extra);
        return Settings.of(m);
    }

    public Settings settings() {
        return settings(Map.of());
    }
}
