package im.testkit;

import im.embedded.EmbeddedKafkaBroker;
import im.embedded.EmbeddedPg;
import im.infra.config.ConfigException;
import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * The services shared by every test of one JVM: one PostgreSQL server and (started on first use)
 * one Kafka broker. Both are embedded unless IM_PG_URL / IM_KAFKA_BOOTSTRAP name external ones.
 * They stop when the JVM exits.
 */
final class SharedStack {
    private static SharedStack instance;

    private final EmbeddedPg pg;           // null when external
    private final String externalPgUrl;    // null when embedded
    private final String pgUser;
    private final String pgPassword;
    private final String externalKafka;
    private final Path workDir;
    private EmbeddedKafkaBroker kafka;
    private ContainerStack containers;

    private SharedStack(Settings s) {
        try {
            workDir = Files.createTempDirectory("im-test-stack");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        // Where an external PostgreSQL and Kafka are: the containers, or what the environment names.
        Settings external;
        String kind = s.string(ConfigKeys.STACK);
        if (kind.equals("containers")) {
            if (!ContainerStack.dockerAvailable()) {
                throw new ConfigException(ConfigKeys.STACK.name(), "'containers' needs a Docker engine, and none answers here");
            }
            containers = ContainerStack.start();
            external = containers.settings();
        } else if (kind.equals("embedded")) {
            external = s;
        } else {
            throw new ConfigException(ConfigKeys.STACK.name(), "must be 'embedded' or 'containers', got '" + kind + "'");
        }
        externalPgUrl = external.optional(ConfigKeys.PG_URL).orElse(null);
        externalKafka = external.optional(ConfigKeys.KAFKA_BOOTSTRAP).orElse(null);
        if (externalPgUrl == null) {
            pg = EmbeddedPg.start(workDir.resolve("pg"), 0, false);
            pgUser = EmbeddedPg.USER;
            pgPassword = EmbeddedPg.PASSWORD;
        } else {
            pg = null;
            pgUser = external.string(ConfigKeys.PG_USER);
            pgPassword = external.string(ConfigKeys.PG_PASSWORD);
        }
        Runtime.getRuntime().addShutdownHook(new Thread(this::shutdown, "im-test-stack-shutdown"));
    }

    static synchronized SharedStack get() {
        if (instance == null) instance = new SharedStack(Settings.fromEnvironment());
        return instance;
    }

    String pgUser() {
        return pgUser;
    }

    String pgPassword() {
        return pgPassword;
    }

    EmbeddedPg embeddedPg() {
        return pg;
    }

    String jdbcUrl(String database) {
        if (pg != null) return pg.jdbcUrl(database);
        // Same server as the external URL, another database.
        int slash = externalPgUrl.indexOf('/', "jdbc:postgresql://".length());
        int q = externalPgUrl.indexOf('?', slash);
        return externalPgUrl.substring(0, slash + 1) + database + (q < 0 ? "" : externalPgUrl.substring(q));
    }

    void createDatabase(String name) {
        if (pg != null) {
            pg.createDatabase(name);
            return;
        }
        try (Connection c = DriverManager.getConnection(externalPgUrl, pgUser, pgPassword);
             Statement st = c.createStatement()) {
            st.execute("CREATE DATABASE " + name);
        } catch (SQLException e) {
            throw new IllegalStateException("cannot create test database " + name, e);
        }
    }

    synchronized boolean kafkaStarted() {
        return externalKafka != null || kafka != null;
    }

    synchronized String kafkaBootstrap() {
        if (externalKafka != null) return externalKafka;
        if (kafka == null) kafka = EmbeddedKafkaBroker.start(workDir.resolve("kafka"));
        return kafka.bootstrapServers();
    }

    private synchronized void shutdown() {
        if (kafka != null) {
            try {
                kafka.close();
            } catch (RuntimeException e) {
                System.err.println("test Kafka broker did not stop cleanly: " + e);
            }
        }
        if (containers != null) containers.close();
        if (pg != null) {
            try {
                pg.close();
            } catch (RuntimeException e) {
                System.err.println("test PostgreSQL did not stop cleanly: " + e);
            }
        }
    }
}
