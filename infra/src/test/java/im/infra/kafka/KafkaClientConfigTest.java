package im.infra.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.infra.config.ConfigException;
import im.infra.config.Settings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class KafkaClientConfigTest {
    private static final String JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"im\" password=\"s3cret-pw\";";

    @TempDir
    Path dir;

    private Settings settings(String fileText) throws Exception {
        Path f = Files.writeString(dir.resolve("kafka.properties"), fileText);
        return Settings.of(Map.of("IM_KAFKA_BOOTSTRAP", "k:9092", "IM_KAFKA_CONFIG_FILE", f.toString()));
    }

    private static String scram() {
        return "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config=" + JAAS + "\n";
    }

    @Test
    void theFilesPropertiesReachEveryClientUnderTheClientsOwn() throws Exception {
        KafkaClientConfig k = KafkaClientConfig.required(settings(scram() + "linger.ms=50\nrequest.timeout.ms=20000\n"));
        Map<String, Object> p = k.clientProperties(Map.of("linger.ms", "0"));
        assertEquals("k:9092", p.get("bootstrap.servers"));
        assertEquals("SASL_PLAINTEXT", p.get("security.protocol"));
        assertEquals(JAAS, p.get("sasl.jaas.config"));
        assertEquals("0", p.get("linger.ms"), "the client's own setting wins");
        assertEquals("20000", p.get("request.timeout.ms"), "the file's where the client sets none");
        Properties own = new Properties();
        own.put("client.id", "x");
        Properties q = k.clientProperties(own);
        assertEquals("SCRAM-SHA-256", q.getProperty("sasl.mechanism"));
        assertEquals("x", q.getProperty("client.id"));
    }

    @Test
    void withoutAFileOnlyTheBootstrapIsAdded() {
        KafkaClientConfig k = KafkaClientConfig.from(Settings.of(Map.of("IM_KAFKA_BOOTSTRAP", "k:9092"))).orElseThrow();
        assertEquals(Map.of("bootstrap.servers", "k:9092"), k.clientProperties(Map.of()));
        assertTrue(KafkaClientConfig.from(Settings.of(Map.of())).isEmpty());
    }

    @Test
    void aSecretIsNeverPrinted() throws Exception {
        String shown = KafkaClientConfig.required(settings(scram() + "ssl.truststore.password=trust-pw\n")).toString();
        assertFalse(shown.contains("s3cret-pw") || shown.contains("trust-pw"), shown);
        assertTrue(shown.contains("sasl.jaas.config=[hidden]") && shown.contains("security.protocol=SASL_PLAINTEXT"), shown);
    }

    @Test
    void aBadFileStopsTheStartNamingTheSetting() throws Exception {
        Settings missing = Settings.of(Map.of("IM_KAFKA_CONFIG_FILE", dir.resolve("nope.properties").toString()));
        ConfigException e = assertThrows(ConfigException.class, () -> KafkaClientConfig.from(missing));
        assertTrue(e.getMessage().startsWith("IM_KAFKA_CONFIG_FILE: ") && e.getMessage().contains("cannot read"), e.getMessage());

        assertRefused("sasl.mechanism=SCRAM-SHA-256\nbad=\\u12\n", "is not a Java properties file");
        assertRefused("sasl.mechanisms=SCRAM-SHA-256\n", "sasl.mechanisms, which is not a Kafka");   // librdkafka's spelling
        assertRefused("bootstrap.servers=other:9092\n", "from IM_KAFKA_BOOTSTRAP");
        assertRefused("acks=1\n", "acks, which the platform sets itself");
        assertRefused("enable.idempotence=false\n", "enable.idempotence, which the platform sets itself");
        assertRefused("security.protocol=SASL_PLAIN\n", "security.protocol is not a valid");
        assertRefused("request.timeout.ms=soon\n", "request.timeout.ms is not a valid int");
    }

    @Test
    void anInvalidSecretIsRefusedWithoutItsValue() throws Exception {
        // ssl.keystore.password is a PASSWORD: any text parses; a secret never appears in a message anyway
        ConfigException e = assertThrows(ConfigException.class, () -> KafkaClientConfig.required(settings("ssl.key.password.x=pw-123\n")));
        assertFalse(e.getMessage().contains("pw-123"), e.getMessage());
    }

    private void assertRefused(String fileText, String expected) throws Exception {
        Settings s = settings(fileText);
        ConfigException e = assertThrows(ConfigException.class, () -> KafkaClientConfig.required(s), fileText);
        assertTrue(e.getMessage().startsWith("IM_KAFKA_CONFIG_FILE: ") && e.getMessage().contains(expected), e.getMessage());
    }
}
