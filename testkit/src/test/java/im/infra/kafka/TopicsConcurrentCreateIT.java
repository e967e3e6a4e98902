package im.infra.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.embedded.EmbeddedKafkaBroker;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every role creates its topics at start, and compose starts the roles together: creators that
 * race on fresh names must all succeed (one creates, the others see TopicExists before the
 * topic's metadata reached the broker they ask), and a real mismatch must still be an error.
 */
class TopicsConcurrentCreateIT {
    private static final int CREATORS = 6;
    private static final int ROUNDS = 40;

    @TempDir
    static Path tmp;
    private static EmbeddedKafkaBroker broker;

    @BeforeAll
    static void startBroker() {
        broker = EmbeddedKafkaBroker.start(tmp.resolve("kafka"));
    }

    @AfterAll
    static void stopBroker() {
        if (broker != null) broker.close();
    }

    @Test
    void concurrentCreatorsOfTheSameFreshTopicsAllSucceed() throws Exception {
        String bootstrap = broker.bootstrapServers();
        ExecutorService pool = Executors.newFixedThreadPool(CREATORS);
        try {
            for (int round = 0; round < ROUNDS; round++) {
                String prefix = "race" + round + ".";
                List<String> names = List.of(prefix + "events", prefix + "cursors", prefix + "interest", prefix + "gateways");
                CyclicBarrier together = new CyclicBarrier(CREATORS);
                List<Future<?>> creators = new ArrayList<>();
                for (int i = 0; i < CREATORS; i++) {
                    creators.add(pool.submit(() -> {
                        together.await(30, TimeUnit.SECONDS);
                        Topics.create(bootstrap, names, 3);
                        return null;
                    }));
                }
                for (int i = 0; i < CREATORS; i++) {
                    try {
                        creators.get(i).get(120, TimeUnit.SECONDS);
                    } catch (java.util.concurrent.ExecutionException e) {
                        throw new AssertionError("round " + round + ": creator " + i + " of " + CREATORS + " failed: "
                                + e.getCause(), e.getCause());
                    }
                }
                Map<String, Integer> expected = new TreeMap<>();
                names.forEach(n -> expected.put(n, 3));
                assertEquals(expected, Topics.describe(KafkaClientConfig.plain(bootstrap), names), "round " + round);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aRacingCreatorWithAnotherPartitionCountGetsAClearError() throws Exception {
        String bootstrap = broker.bootstrapServers();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            String topic = "mismatch.events";
            CyclicBarrier together = new CyclicBarrier(2);
            Future<Exception> three = pool.submit(() -> attempt(together, bootstrap, topic, 3));
            Future<Exception> five = pool.submit(() -> attempt(together, bootstrap, topic, 5));
            Exception a = three.get(120, TimeUnit.SECONDS);
            Exception b = five.get(120, TimeUnit.SECONDS);
            assertTrue(a == null ^ b == null, "exactly one creator wins, the other is refused: " + a + " / " + b);
            Exception refused = a != null ? a : b;
            assertTrue(refused instanceof IllegalStateException && refused.getMessage().contains(topic)
                            && refused.getMessage().contains("3") && refused.getMessage().contains("5"),
                    "the error names the topic and both counts: " + refused);
            int won = a == null ? 3 : 5;
            assertEquals(Map.of(topic, won), Topics.describe(KafkaClientConfig.plain(bootstrap), List.of(topic)));
            assertThrows(IllegalStateException.class, () -> Topics.create(bootstrap, List.of(topic), won == 3 ? 5 : 3));
        } finally {
            pool.shutdownNow();
        }
    }

    private static Exception attempt(CyclicBarrier together, String bootstrap, String topic, int partitions) throws Exception {
        together.await(30, TimeUnit.SECONDS);
        try {
            Topics.create(bootstrap, List.of(topic), partitions);
            return null;
        } catch (IllegalStateException e) {
            return e;
        }
    }
}
