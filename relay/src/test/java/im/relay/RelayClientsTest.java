package im.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import im.infra.config.Settings;
import im.infra.kafka.TopicNames;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.postgresql.util.HostSpec;

/**
 * Debezium connects from its own {@code database.*} settings, not from IM_PG_URL: the URL's TLS
 * parameters must be carried over (they were dropped before, so the change stream ignored
 * {@code sslmode=verify-full}), and its Kafka offset store must get IM_KAFKA_CONFIG_FILE's settings.
 */
class RelayClientsTest {
    @TempDir
    Path dir;

    private Properties engine(String url) throws Exception {
        Path file = Files.writeString(dir.resolve("kafka.properties"), "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n");
        RelayConfig cfg = RelayConfig.from(Settings.of(Map.of("IM_PG_URL", url, "IM_KAFKA_BOOTSTRAP", "k:9093",
                "IM_KAFKA_CONFIG_FILE", file.toString())));
        return RelayClients.engineProperties(cfg, new TopicNames("im."), new HostSpec("db", 5432));
    }

    @Test
    void theUrlsTlsParametersReachDebeziumsConnections() throws Exception {
        Properties p = engine("jdbc:postgresql://db:5432/im?sslmode=verify-full&sslrootcert=/run/secrets/pg-ca.pem"
                + "&sslcert=/c.pem&sslkey=/k.pk8&targetServerType=primary");
        assertEquals("verify-full", p.getProperty("database.sslmode"));
        assertEquals("/run/secrets/pg-ca.pem", p.getProperty("database.sslrootcert"));
        assertEquals("/c.pem", p.getProperty("database.sslcert"));
        assertEquals("/k.pk8", p.getProperty("database.sslkey"));
        assertFalse(p.containsKey("database.targetServerType"));
    }

    @Test
    void sslTrueWithoutAModeIsVerifyFullAsPgjdbcReadsIt() throws Exception {
        assertEquals("verify-full", engine("jdbc:postgresql://db/im?ssl=true").getProperty("database.sslmode"));
        assertEquals("require", engine("jdbc:postgresql://db/im?ssl=true&sslmode=require").getProperty("database.sslmode"));
        assertFalse(engine("jdbc:postgresql://db/im").containsKey("database.sslmode"), "Debezium's default then, as pgjdbc's");
    }

    @Test
    void theOffsetStoreGetsTheKafkaClientSettings() throws Exception {
        Properties p = engine("jdbc:postgresql://db/im");
        assertEquals("k:9093", p.getProperty("bootstrap.servers"));
        assertEquals("SASL_SSL", p.getProperty("security.protocol"));
        assertEquals("SCRAM-SHA-256", p.getProperty("sasl.mechanism"));
    }
}
