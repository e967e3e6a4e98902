package im.infra.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;

import im.embedded.KafkaBrokerProcess;
import im.embedded.KafkaCluster;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * On a cluster, a broker applies a new topic's metadata a little after the controller committed
 * it, and not at the same moment as the others. A role starts its consumers right after
 * {@link Topics#create} returns, and a Kafka Streams global store asks whichever broker its
 * consumer reaches: if that broker has not yet applied the topic, the store fails at once with
 * "There are no partitions available" (seen in KafkaClusterIT). So {@code create} returns only
 * once every running broker answers for every topic; each broker is asked by a fresh consumer
 * whose only bootstrap address is that broker, so the answer is that broker's.
 */
class TopicsOnAClusterIT {
    private static final int ROUNDS = 25;
    private static final int PARTITIONS = 3;

    @TempDir
    static Path tmp;
    private static KafkaCluster cluster;

    @BeforeAll
    static void startCluster() {
        cluster = KafkaCluster.start(tmp.resolve("kafka"), 3, false);
    }

    @AfterAll
    static void stopCluster() {
        if (cluster != null) cluster.close();
    }

    @Test
    void aCreatedTopicIsKnownToEveryBrokerWhenCreateReturns() {
        createAndAskEveryBroker("vis");
    }

    @Test
    void soItIsRightAfterTheActiveControllerWasKilledAndRestarted() {
        KafkaBrokerProcess controller = cluster.node(cluster.activeController());
        controller.kill();
        controller.restart();
        createAndAskEveryBroker("restart");
    }

    /**
     * A role starting while one broker of three is down (a rolling restart) must neither refuse to
     * start (the factor fits the registered brokers; only the live ones are fewer) nor fail on
     * topics that exist; a topic that does not exist yet is created once the broker is back.
     */
    @Test
    void aBrokerThatIsDownIsWaitedForNotCountedAgainstTheFactor() throws Exception {
        Topics.create(cluster.bootstrapServers(), List.of("down.events"), PARTITIONS, new Replication(3));
        KafkaBrokerProcess node = cluster.nodes().stream().filter(n -> n.nodeId() != cluster.activeController())
                .findFirst().orElseThrow();
        node.kill();
        // The controller fences a dead broker after its session timeout; until then it still counts.
        im.testkit.Await.until(Duration.ofSeconds(60), () -> liveBrokers() == 2, "the killed broker fenced");
        Topics.create(cluster.bootstrapServers(), List.of("down.events"), PARTITIONS, new Replication(3));
        java.util.concurrent.CompletableFuture<Void> back = java.util.concurrent.CompletableFuture.runAsync(node::restart);
        Topics.create(cluster.bootstrapServers(), List.of("down.new"), PARTITIONS, new Replication(3));
        back.get(60, java.util.concurrent.TimeUnit.SECONDS);
        for (KafkaBrokerProcess n : cluster.nodes()) {
            assertEquals(PARTITIONS, partitionsSeenBy(n.bootstrapServers(), "down.new"), "on the broker at " + n.bootstrapServers());
        }
    }

    private static void createAndAskEveryBroker(String prefix) {
        for (int round = 0; round < ROUNDS; round++) {
            List<String> names = List.of(prefix + round + ".events", prefix + round + ".gateways");
            Topics.create(cluster.bootstrapServers(), names, PARTITIONS, new Replication(3));
            for (KafkaBrokerProcess node : cluster.nodes()) {
                for (String topic : names) {
                    assertEquals(PARTITIONS, partitionsSeenBy(node.bootstrapServers(), topic),
                            "round " + round + ": partitions of " + topic + " on the broker at " + node.bootstrapServers());
                }
            }
        }
    }

    private static int liveBrokers() {
        Properties p = new Properties();
        p.put(org.apache.kafka.clients.admin.AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrapServers());
        try (org.apache.kafka.clients.admin.Admin admin = org.apache.kafka.clients.admin.Admin.create(p)) {
            return admin.describeCluster().nodes().get(10, java.util.concurrent.TimeUnit.SECONDS).size();
        } catch (Exception e) {
            return -1;
        }
    }

    private static int partitionsSeenBy(String broker, String topic) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            return c.partitionsFor(topic, Duration.ofSeconds(10)).size();
        }
    }
}
