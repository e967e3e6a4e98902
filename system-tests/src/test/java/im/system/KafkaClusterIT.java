package im.system;

import im.gateway.Fixture;
import im.gateway.Gateway;
import im.testkit.Await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.ImClient;
import im.client.api.ClientOptions;
import im.embedded.KafkaCluster;
import im.infra.config.ConfigKeys;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import java.util.stream.LongStream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The platform on a three-node KRaft cluster (child JVMs, IM_REPLICATION_FACTOR=3, so every
 * topic has 3 replicas and min.insync.replicas 2; producers acks=all and idempotent). Under a
 * steady send load with both devices online, one node is killed with kill -9 (the leader of the
 * conversation's event-topic partition, or the active controller) and restarted. Every confirmed
 * seq is on the events topic (duplicates allowed, each the same event), the topic has no gap, the
 * receiver converges on the connection it had, and the time from the kill to the first push of
 * an event committed after it is printed (docs/reliability.md).
 */
@ExtendWith(ImStackExtension.class)
class KafkaClusterIT {
    private static final String CONV = "c-ab";
    private static final int PARTITIONS = 3;
    private static KafkaCluster cluster;

    @BeforeAll
    static void startCluster(@TempDir Path dir) {
        cluster = KafkaCluster.start(dir.resolve("kafka"), 3, false);
    }

    @AfterAll
    static void stopCluster() {
        if (cluster != null) cluster.close();
    }

    @Test
    void killingTheLeaderOfTheConversationsPartitionLosesNothing(TestStack stack, @TempDir Path dir) throws Exception {
        String events = stack.topicPrefix() + "events";
        runWithKill(stack, dir, "event-partition leader", () -> cluster.leaderOf(events, partitionOf(CONV)));
    }

    @Test
    void killingTheActiveControllerLosesNothing(TestStack stack, @TempDir Path dir) throws Exception {
        runWithKill(stack, dir, "active controller", cluster::activeController);
    }

    private void runWithKill(TestStack stack, Path dir, String what, IntSupplier victimOf) throws Exception {
        Fixture fx = new Fixture(stack);
        try (Pipeline p = new Pipeline(stack, Map.of(
                ConfigKeys.KAFKA_BOOTSTRAP.name(), cluster.bootstrapServers(),
                ConfigKeys.REPLICATION_FACTOR.name(), "3",
                ConfigKeys.PARTITIONS.name(), String.valueOf(PARTITIONS),
                ConfigKeys.SWEEP_MS.name(), "500"))) {
            p.addSweeper();
            Gateway gw = p.addGateway("gw-a", "");
            p.awaitRunning();
            List<String> topics = new ArrayList<>(p.topics.conversationKeyed());
            topics.addAll(p.topics.singlePartition());
            topics.add(p.topics.channel("gw-a"));
            topics.add(p.topics.prefix() + "relay-offsets");
            topics.addAll(streamsInternalTopics(p.topics.prefix().replace('.', '-')));
            assertReplicated(topics, 3, 2);

            try (ImClient ana = ImClient.open(ClientOptions.of(Pipeline.ws(gw), fx.anaToken, dir.resolve("ana")));
                 ImClient bo = ImClient.open(ClientOptions.of(Pipeline.ws(gw), fx.boToken, dir.resolve("bo")))) {
                SteadyLoad load = new SteadyLoad(ana, bo, CONV, 20);
                ana.connect();
                bo.connect();
                load.start();
                Await.until(Duration.ofSeconds(60), () -> load.pushedAbove(20), "pushes flow before the fault");

                int victim = victimOf.getAsInt();
                long before = load.highestConfirmed();
                long killedAt = System.nanoTime();
                cluster.node(victim).kill();
                Await.until(Duration.ofSeconds(90), () -> load.pushedAbove(before), "a push of an event sent after the kill");
                long toPush = load.msToFirstPushAbove(before, killedAt);
                long down = load.highestConfirmed();
                Await.until(Duration.ofSeconds(30), () -> load.highestConfirmed() > down + 50, "sends go on with a node down");

                long restartedAt = System.nanoTime();
                cluster.node(victim).restart();
                long restartMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - restartedAt);
                long back = load.highestConfirmed();
                Await.until(Duration.ofSeconds(30), () -> load.pushedAbove(back + 25), "pushes after the restart");
                load.stop();

                long head = fx.head(CONV);
                Await.until(Duration.ofSeconds(90), () -> bo.cursor(CONV) == head, "bo converged to " + head);
                assertEquals(1, load.receiverConnects(), "the receiver kept its connection");
                assertEquals(1, load.senderConnects(), "the sender kept its connection");
                assertEquals(LongStream.rangeClosed(2, head).boxed().toList(),
                        bo.events(CONV).stream().map(e -> e.seq()).toList(), "bo holds every event once, in order");

                EventTopicCheck check = awaitTopicHead(p, head);
                assertEquals(Set.of(), check.missing(load.confirmed()), "every confirmed seq is on the events topic");
                assertEquals(List.of(), check.conflicts(), "a duplicate is always the same event");
                assertEquals(new TreeSet<>(LongStream.rangeClosed(1, head).boxed().toList()), check.bySeq().keySet(),
                        "the topic holds 1.." + head + ", no gap and nothing beyond");
                System.out.printf("KafkaClusterIT %s: killed node %d; kill -> first push %d ms; restart %d ms; "
                                + "%d messages confirmed, %d send failures, %d duplicates absorbed on the topic%n",
                        what, victim, toPush, restartMs, load.confirmed().size(), load.failures(), check.duplicates());
                assertTrue(toPush >= 0);
            }
        }
    }

    /** Reads the topic until it holds every seq to {@code head} (the relay may still be publishing). */
    private static EventTopicCheck awaitTopicHead(Pipeline p, long head) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            EventTopicCheck c = EventTopicCheck.read(cluster.bootstrapServers(), p.topics.events(), CONV);
            if (c.contiguousTo(head) || System.nanoTime() > deadline) return c;
        }
    }

    /** The producer's default partitioner for a String key. */
    private static int partitionOf(String key) {
        return Utils.toPositive(Utils.murmur2(key.getBytes(StandardCharsets.UTF_8))) % PARTITIONS;
    }

    /** The changelog and repartition topics of the test's Streams applications (their ids start with the prefix). */
    private static List<String> streamsInternalTopics(String appIdPrefix) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrapServers());
        try (Admin admin = Admin.create(props)) {
            List<String> internal = admin.listTopics().names().get(30, TimeUnit.SECONDS).stream()
                    .filter(t -> t.startsWith(appIdPrefix) && (t.endsWith("-changelog") || t.endsWith("-repartition"))).toList();
            assertTrue(!internal.isEmpty(), "the Streams roles created internal topics");
            return internal;
        }
    }

    private static void assertReplicated(List<String> topics, int replicas, int minIsr) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrapServers());
        try (Admin admin = Admin.create(props)) {
            Map<String, TopicDescription> d = admin.describeTopics(topics).allTopicNames().get(30, TimeUnit.SECONDS);
            List<ConfigResource> res = topics.stream().map(t -> new ConfigResource(ConfigResource.Type.TOPIC, t)).toList();
            Map<ConfigResource, Config> cfg = admin.describeConfigs(res).all().get(30, TimeUnit.SECONDS);
            for (String t : topics) {
                d.get(t).partitions().forEach(pi -> assertEquals(replicas, pi.replicas().size(), t + " replicas"));
                assertEquals(String.valueOf(minIsr), cfg.get(new ConfigResource(ConfigResource.Type.TOPIC, t))
                        .get("min.insync.replicas").value(), t + " min.insync.replicas");
            }
        }
    }
}
