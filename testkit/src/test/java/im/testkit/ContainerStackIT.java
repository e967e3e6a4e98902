package im.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.kafka.Topics;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** Runs only where Docker exists; elsewhere it is reported as skipped, quickly. */
class ContainerStackIT {

    static final String NO_DOCKER =
            "Docker is not available on this machine: the Testcontainers provider is opt-in (IM_STACK=containers)";

    @Test
    void containerStackServesPostgresAndAKafkaTopicRoundTrip() throws Exception {
        long t0 = System.nanoTime();
        boolean docker = ContainerStack.dockerAvailable();
        System.out.printf("[timing] dockerAvailable()=%s in %d ms%n", docker, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
        if (!docker) {
            Assumptions.abort(NO_DOCKER); // reported as skipped, with exactly this message
        }

        try (ContainerStack stack = ContainerStack.start()) {
            Settings where = stack.settings();
            try (Connection c = DriverManager.getConnection(where.string(ConfigKeys.PG_URL), where.string(ConfigKeys.PG_USER),
                    where.string(ConfigKeys.PG_PASSWORD));
                 Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT 1")) {
                assertTrue(rs.next());
                assertEquals(1, rs.getInt(1));
            }

            String bootstrap = where.string(ConfigKeys.KAFKA_BOOTSTRAP);
            Topics.create(bootstrap, List.of("roundtrip"), 1);
            Properties pp = new Properties();
            pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            pp.put(ProducerConfig.ACKS_CONFIG, "all");
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
                producer.send(new ProducerRecord<>("roundtrip", "k", "hello")).get(30, TimeUnit.SECONDS);
            }
            Properties cp = new Properties();
            cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            List<String> got = new ArrayList<>();
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp, new StringDeserializer(), new StringDeserializer())) {
                TopicPartition tp = new TopicPartition("roundtrip", 0);
                consumer.assign(List.of(tp));
                consumer.seekToBeginning(List.of(tp));
                long end = System.nanoTime() + Duration.ofSeconds(30).toNanos();
                while (got.isEmpty() && System.nanoTime() < end) {
                    consumer.poll(Duration.ofMillis(200)).forEach(r -> got.add(r.value()));
                }
            }
            assertEquals(List.of("hello"), got);
        }
    }
}
