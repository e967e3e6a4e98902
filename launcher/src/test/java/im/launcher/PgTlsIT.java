package im.launcher;

import static org.junit.jupiter.api.Assertions.assertTrue;

import im.embedded.EmbeddedPg;
import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.db.Database;
import im.infra.db.DbConfig;
import im.infra.kafka.KafkaClientConfig;
import im.infra.kafka.KafkaClients;
import im.infra.kafka.SharedTopics;
import im.infra.kafka.TopicNames;
import im.infra.ops.Metrics;
import im.infra.role.Role;
import im.relay.CdcRelay;
import im.store.directory.Directory;
import im.testkit.Await;
import im.testkit.ImStackExtension;
import im.testkit.TestCertificates;
import im.testkit.TestStack;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * PostgreSQL over TLS, given to the roles by IM_PG_URL alone
 * ({@code sslmode=verify-full&sslrootcert=...&sslcert=...&sslkey=...}): a PostgreSQL that serves
 * TLS with a certificate of a private CA, and whose replication connections must be TLS with a
 * client certificate of that CA ({@code hostssl replication ... cert}; others must be TLS too). The
 * roles' pool migrates and writes through it, and the CDC relay streams the changes: its Debezium
 * engine opens the replication connection from its own settings, so it only gets in when the URL's
 * TLS parameters reach them (they did not: the relay connected without a client certificate).
 */
@ExtendWith(ImStackExtension.class)
class PgTlsIT {
    @Test
    void theRolesReachAPostgreSqlThatRequiresTlsAndTheRelaysClientCertificate(TestStack stack, @TempDir Path dir) throws Exception {
        TestCertificates.WithClient certs = TestCertificates.privateCaWithClient(dir, "pg", "127.0.0.1", EmbeddedPg.USER);
        for (Path key : List.of(certs.ca().keyFile(), certs.clientKeyFile())) {   // both ends refuse a key others may read
            Files.setPosixFilePermissions(key, PosixFilePermissions.fromString("rw-------"));
        }
        try (EmbeddedPg pg = EmbeddedPg.start(dir.resolve("data"), 0, false)) {
            pg.createDatabase("im");
            requireTls(pg, certs);
            String url = pg.jdbcUrl("im") + "?sslmode=verify-full&sslrootcert=" + certs.ca().caFile()
                    + "&sslcert=" + certs.clientCertFile() + "&sslkey=" + certs.clientKeyFile();
            stack.kafkaBootstrap();   // start the shared broker first, so that the settings name it
            Settings s = stack.settings(Map.of(
                    ConfigKeys.PG_URL.name(), url,
                    ConfigKeys.PG_USER.name(), EmbeddedPg.USER,
                    ConfigKeys.PG_PASSWORD.name(), EmbeddedPg.PASSWORD,
                    ConfigKeys.RELAY_SLOT.name(), "tls_" + stack.database(),
                    ConfigKeys.TOPIC_PREFIX.name(), "tls" + stack.database() + "."));
            try (Database db = Database.open(DbConfig.from(s), "pg-tls")) {
                Database.migrate(db.dataSource());
                try (Connection c = db.dataSource().getConnection(); Statement st = c.createStatement();
                     ResultSet rs = st.executeQuery("SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()")) {
                    assertTrue(rs.next() && rs.getBoolean(1), "the pool's connections are TLS");
                }
                TopicNames topics = TopicNames.from(s);
                SharedTopics.create(stack.kafkaBootstrap(), s);
                try (Role.Running<?> relay = CdcRelay.role().start(s, Metrics.newRegistry())) {
                    // streaming starts once the replication connection is in: TLS, with the relay's client certificate
                    Await.until(Duration.ofSeconds(60), () -> count(pg, "SELECT count(*) FROM pg_stat_replication r JOIN pg_stat_ssl s USING (pid)"
                            + " WHERE s.ssl AND s.client_dn = '/CN=" + EmbeddedPg.USER + "'") == 1,
                            "the relay's replication connection is TLS with its client certificate");
                    Directory directory = new Directory(db.dataSource(), Clock.systemUTC());
                    directory.createUser("u-ana", "ana");
                    directory.createUser("u-bo", "bo");
                    directory.createConversation("c-tls", "direct", List.of("u-ana", "u-bo"));
                    List<String> published = new ArrayList<>();
                    try (KafkaConsumer<String, String> events = KafkaClients.assignedConsumer(KafkaClientConfig.plain(stack.kafkaBootstrap()), Map.of())) {
                        List<TopicPartition> parts = events.partitionsFor(topics.events()).stream()
                                .map(p -> new TopicPartition(p.topic(), p.partition())).toList();
                        events.assign(parts);
                        events.seekToBeginning(parts);
                        Await.until(Duration.ofSeconds(90), () -> {
                            for (ConsumerRecord<String, String> r : events.poll(Duration.ofMillis(200))) {
                                if ("c-tls".equals(r.key())) published.add(r.value());
                            }
                            return published.size() >= 2;
                        }, "the relay streamed the two joins of c-tls, written after its replication connection was in");
                    }
                    assertTrue(relay.isReady());
                }
            }
        }
    }

    /**
     * Serves TLS with the private CA's server certificate and asks for client certificates of that
     * CA; replication connections only over TLS with one, every other connection only over TLS.
     */
    private static void requireTls(EmbeddedPg pg, TestCertificates.WithClient certs) throws Exception {
        try (Connection c = pg.connect("postgres"); Statement st = c.createStatement()) {
            st.execute("ALTER SYSTEM SET ssl_cert_file = '" + certs.ca().certFile() + "'");
            st.execute("ALTER SYSTEM SET ssl_key_file = '" + certs.ca().keyFile() + "'");
            st.execute("ALTER SYSTEM SET ssl_ca_file = '" + certs.ca().caFile() + "'");
            st.execute("ALTER SYSTEM SET ssl = on");
            Path hba;
            try (ResultSet rs = st.executeQuery("SHOW hba_file")) {
                rs.next();
                hba = Path.of(rs.getString(1));
            }
            Files.writeString(hba, "hostssl replication all 127.0.0.1/32 cert\n"
                    + "host replication all 127.0.0.1/32 reject\n"
                    + "hostnossl all all 127.0.0.1/32 reject\n"
                    + "hostssl all all 127.0.0.1/32 trust\n");
            try (ResultSet rs = st.executeQuery("SELECT pg_reload_conf()")) {
                rs.next();
            }
        }
        Await.until(Duration.ofSeconds(10), () -> count(pg, "SELECT count(*) FROM pg_settings WHERE name = 'ssl' AND setting = 'on'") == 1,
                "PostgreSQL reloaded with ssl = on");
    }

    private static long count(EmbeddedPg pg, String sql) {
        try (Connection c = pg.connect("postgres"); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        } catch (Exception e) {
            throw new IllegalStateException(sql, e);
        }
    }
}
