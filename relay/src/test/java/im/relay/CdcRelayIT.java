package im.relay;

import im.infra.ops.Metrics;
import static im.relay.TopicReader.assertCompleteAndOrdered;
import static im.relay.TopicReader.publisher;
import static im.relay.TopicReader.reached;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.fault.Faults;
import im.infra.identity.DevicePrincipal;
import im.infra.kafka.TopicNames;
import im.infra.kafka.Topics;
import im.store.directory.Directory;
import im.store.send.MessageChanges;
import im.store.send.SendService;
import im.testkit.Await;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(ImStackExtension.class)
class CdcRelayIT {
    /**
     * docs/architecture.md's takeover bound with the default IM_RELAY_LOCK_TIMEOUT_MS (5 s): the
     * server ends the frozen holder's session, the standby's next poll wins the lock and takes
     * the slot over, and its engine streams again.
     */
    private static final Duration FREEZE_TAKEOVER_BOUND = Duration.ofSeconds(15);

    private TestStack stack;
    private Settings settings;
    private TopicNames topics;
    private Directory dir;
    private SendService sends;
    private DevicePrincipal ana;

    @BeforeEach
    void setUp(TestStack stack) {
        this.stack = stack;
        stack.kafkaBootstrap();
        settings = stack.settings(Map.of(ConfigKeys.RELAY_SLOT.name(), "s_" + stack.database()));
        topics = TopicNames.from(settings);
        Topics.create(stack.kafkaBootstrap(), topics.conversationKeyed(), 3);
        dir = new Directory(stack.dataSource(), Clock.systemUTC());
        dir.createUser("u-ana", "Ana");
        dir.createUser("u-bo", "Bo");
        ana = dir.authenticate(dir.registerDevice("u-ana", "d-ana").token());
        dir.registerDevice("u-bo", "d-bo");
        dir.createConversation("c1", "direct", List.of("u-ana", "u-bo"));
        dir.createConversation("c2", "group", List.of("u-ana", "u-bo"));   // one bulk join of both: seq 1
        sends = new SendService(stack.dataSource(), Faults.none(), Clock.systemUTC());
    }

    @Test
    void publishesEveryCommittedEventAsCleanJsonInSeqOrder() throws Exception {
        try (CdcRelay relay = CdcRelay.start(RelayConfig.from(settings), topics, Metrics.detached());
             TopicReader reader = new TopicReader(stack.kafkaBootstrap(), topics.events())) {
            for (int i = 0; i < 30; i++) sends.send(ana, i % 3 == 0 ? "c2" : "c1", "m" + i, "body " + i);
            Map<String, Long> heads = Map.of("c1", 22L, "c2", 11L);
            List<ConsumerRecord<String, String>> records = reader.readUntil(Duration.ofSeconds(60), r -> reached(r, heads));
            assertCompleteAndOrdered(records, heads);
            JsonNode first = records.stream().map(TopicReader::json)
                    .filter(v -> v.get("kind").asText().equals("msg")).findFirst().orElseThrow();
            assertEquals(1, first.get("v").asInt());
            for (String f : List.of("conv", "seq", "kind", "mid", "sender", "device", "cmid", "body", "at")) {
                assertTrue(first.has(f), "field " + f + " in " + first);
            }
            assertFalse(first.has("before") || first.has("payload") || first.has("source"), "not the Debezium envelope");
            assertEquals("u-ana", first.get("sender").asText());
            assertTrue(first.get("at").asLong() > 1_700_000_000_000L, "at is epoch millis");
            Map<String, List<JsonNode>> joins = new HashMap<>();
            for (ConsumerRecord<String, String> r : records) {
                JsonNode v = TopicReader.json(r);
                if (v.get("kind").asText().equals("join")) joins.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(v);
            }
            assertEquals(2, joins.get("c1").size(), "a direct conversation: a single join each: " + joins);
            for (JsonNode join : joins.get("c1")) {
                assertTrue(join.get("cmid").isNull() && !join.has("count") && !join.has("users"), "the single shape: " + join);
            }
            assertEquals(1, joins.get("c2").size(), "a group created with two members: one bulk join: " + joins);
            JsonNode bulk = joins.get("c2").get(0);
            assertEquals(1, bulk.get("seq").asLong());
            assertEquals("u-ana", bulk.get("sender").asText(), "the first of its users");
            assertEquals(2, bulk.get("count").asInt());
            assertEquals("[\"u-ana\",\"u-bo\"]", bulk.get("users").toString(), "the CDC'd record carries the users, in order");
            assertEquals(List.of("u-ana", "u-bo"), im.topics.EventRecord.read(bulk.toString()).members(), "and the strict reader takes it");
            assertFalse(first.has("count") || first.has("users"), "a message has the single shape: " + first);
            assertTrue(relay.isActive());
        }
    }

    /**
     * An edit and a recall are events like any other on the topic, with the seq they change as
     * {@code ref}; the recall's emptying of the message and its edit (an UPDATE, the one change of a
     * committed event) publishes nothing and does not stop the relay.
     */
    @Test
    void anEditAndARecallArePublishedAsEventsAndTheEmptyingIsNot() throws Exception {
        MessageChanges changes = new MessageChanges(stack.dataSource(), Faults.none(), Clock.systemUTC(), Duration.ofHours(1), Duration.ofHours(1));
        try (CdcRelay relay = CdcRelay.start(RelayConfig.from(settings), topics, Metrics.detached());
             TopicReader reader = new TopicReader(stack.kafkaBootstrap(), topics.events())) {
            // Changes made before the slot exists are not streamed: wait until the relay streams.
            sends.send(ana, "c1", "marker", "marker");
            reader.readUntil(Duration.ofSeconds(60), r -> reached(r, Map.of("c1", 3L, "c2", 1L)));
            long msg = sends.send(ana, "c1", "m1", "the secret").seq();
            changes.edit(ana, "c1", "m2", msg, "the secret, edited");
            changes.recall(ana, "c1", "m3", msg);
            sends.send(ana, "c1", "m4", "after");
            Map<String, Long> heads = Map.of("c1", msg + 3, "c2", 1L);
            List<ConsumerRecord<String, String>> records = reader.readUntil(Duration.ofSeconds(60), r -> reached(r, heads));
            assertCompleteAndOrdered(records, heads);
            Map<Long, JsonNode> c1 = new HashMap<>();
            for (ConsumerRecord<String, String> r : records) {
                JsonNode v = TopicReader.json(r);
                if (r.key().equals("c1")) assertEquals(null, c1.put(v.get("seq").asLong(), v), "one record per event: " + v);
            }
            assertEquals(List.of("edit", msg, "the secret, edited"), List.of(c1.get(msg + 1).get("kind").asText(),
                    c1.get(msg + 1).get("ref").asLong(), c1.get(msg + 1).get("body").asText()));
            assertEquals(List.of("recall", msg, ""), List.of(c1.get(msg + 2).get("kind").asText(),
                    c1.get(msg + 2).get("ref").asLong(), c1.get(msg + 2).get("body").asText()));
            assertFalse(c1.get(msg).has("ref"), "a message has no ref");
            assertEquals("after", c1.get(msg + 3).get("body").asText());
            assertTrue(relay.isActive(), "the UPDATE of the recalled rows did not stop the relay");
        }
    }

    /**
     * Cursor rows are not in the publication (the cursor service publishes cursor changes); a
     * reinstall's reset is: one deletion record per conversation the device had a cursor in,
     * naming the epoch the device moved to. Changes of device_cursors committed before the reset
     * would come first on the topic if the relay still published them.
     */
    @Test
    void cursorRowsAreNotPublishedButAReinstallsResetIs() throws Exception {
        // As an older relay left it: the publication still lists device_cursors. The relay's
        // start must bring it to the current table list.
        try (Connection c = stack.dataSource().getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE PUBLICATION " + RelayConfig.from(settings).publication() + " FOR TABLE events, device_cursors");
        }
        try (CdcRelay relay = CdcRelay.start(RelayConfig.from(settings), topics, Metrics.detached());
             TopicReader reader = new TopicReader(stack.kafkaBootstrap(), topics.cursors());
             TopicReader events = new TopicReader(stack.kafkaBootstrap(), topics.events());
             Connection c = stack.dataSource().getConnection(); Statement st = c.createStatement()) {
            // Changes made before the slot exists are not streamed: wait until the relay streams,
            // using an event as the marker.
            sends.send(ana, "c1", "marker", "marker");
            events.readUntil(Duration.ofSeconds(60), r -> reached(r, Map.of("c1", 3L, "c2", 1L)));
            st.execute("INSERT INTO device_cursors (device_id, conv_id, install_epoch, delivered_seq) VALUES ('d-bo', 'c1', 1, 1)");
            st.execute("UPDATE device_cursors SET delivered_seq = 2 WHERE device_id = 'd-bo'");
            st.execute("INSERT INTO device_cursors (device_id, conv_id, install_epoch, delivered_seq) VALUES ('d-bo', 'c2', 1, 1)");
            dir.reinstallDevice("d-bo");
            List<ConsumerRecord<String, String>> rs = reader.readUntil(Duration.ofSeconds(60), r -> r.size() >= 2);
            Map<String, JsonNode> byConv = new HashMap<>();
            for (ConsumerRecord<String, String> r : rs.subList(0, 2)) {
                JsonNode v = TopicReader.json(r);
                assertTrue(v.path("deleted").asBoolean(), "only the reset is published, not the cursor rows: " + v);
                assertEquals(r.key(), v.get("conv").asText(), "keyed by conversation");
                byConv.put(r.key(), v);
            }
            assertEquals(java.util.Set.of("c1", "c2"), byConv.keySet(), "one deletion per conversation the device had a cursor in");
            for (JsonNode v : byConv.values()) {
                assertEquals("d-bo", v.get("device").asText());
                assertEquals(2, v.get("epoch").asInt(), "the epoch the device moved to");
            }
            assertEquals(2, rs.size(), "nothing else on the topic: " + rs);
        }
    }

    @Test
    void standbyTakesOverWhenTheActiveRelayStops() throws Exception {
        try (TopicReader reader = new TopicReader(stack.kafkaBootstrap(), topics.events());
             CdcRelay first = CdcRelay.start(RelayConfig.from(settings), topics, Metrics.detached())) {
            Await.until(Duration.ofSeconds(60), first::isActive, "first relay active");
            try (CdcRelay second = CdcRelay.start(RelayConfig.from(settings), topics, Metrics.detached())) {
                sends.send(ana, "c1", "before", "before takeover");
                reader.readUntil(Duration.ofSeconds(60), r -> reached(r, Map.of("c1", 3L, "c2", 1L)));
                assertFalse(second.isActive(), "one active relay per slot; the second waits");
                first.close();
                Await.until(Duration.ofSeconds(60), second::isActive, "standby took over");
                sends.send(ana, "c1", "after", "after takeover");
                List<ConsumerRecord<String, String>> all = reader.readUntil(Duration.ofSeconds(60), r -> reached(r, Map.of("c1", 4L, "c2", 1L)));
                assertCompleteAndOrdered(all, Map.of("c1", 4L, "c2", 1L));
            }
        }
    }

    /**
     * The lock session lives for the whole time the lock is held, not only while the engine runs:
     * a new holder whose engine takes longer than the lock timeout to build (a loaded machine)
     * keeps its lock through it, the standby stays a standby, and every event is published once,
     * by the holder. A hook holds engine construction up for three lock timeouts.
     */
    @Test
    void theHolderKeepsItsLockWhileItsEngineIsSlowToBuild() throws Exception {
        Duration lockTimeout = Duration.ofSeconds(2);
        Settings s = stack.settings(Map.of(ConfigKeys.RELAY_SLOT.name(), "s_" + stack.database(),
                ConfigKeys.RELAY_LOCK_TIMEOUT_MS.name(), String.valueOf(lockTimeout.toMillis())));
        CountDownLatch building = new CountDownLatch(1);
        CountDownLatch built = new CountDownLatch(1);
        Runnable slowBuild = () -> {
            building.countDown();
            try {
                built.await(120, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        };
        try (TopicReader reader = new TopicReader(stack.kafkaBootstrap(), topics.events());
             CdcRelay holder = CdcRelay.start(RelayConfig.from(s), topics, Metrics.detached(), slowBuild)) {
            try {
                Await.until(Duration.ofSeconds(60), () -> building.getCount() == 0, "the holder builds its engine");
                long buildingSince = System.nanoTime();
                long pid = lockHolderPid();
                assertTrue(holder.isActive() && pid > 0, "the holder still has the lock as its engine's build begins (backend "
                        + pid + ", -1: nobody)");
                try (CdcRelay standby = CdcRelay.start(RelayConfig.from(s), topics, Metrics.detached())) {
                    Await.until(Duration.ofSeconds(30), standby::isReady, "the standby waits on the lock");
                    Await.holdsFor(lockTimeout.multipliedBy(3), () -> {
                        long now = lockHolderPid();
                        if (now != pid) {
                            throw new AssertionError("the lock passed from backend " + pid + " to " + now + " (-1: nobody) "
                                    + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - buildingSince) + " ms into the engine's build");
                        }
                        return holder.isActive() && !standby.isActive();
                    }, "the holder keeps its lock, and the standby waits, while the holder's engine is being built");
                    built.countDown();
                    sends.send(ana, "c1", "after", "after a slow engine build");
                    Map<String, Long> heads = Map.of("c1", 3L, "c2", 1L);
                    List<ConsumerRecord<String, String>> all = reader.readUntil(Duration.ofSeconds(60), r -> reached(r, heads));
                    assertEquals(0, assertCompleteAndOrdered(all, heads), "each event published once: no takeover, no replay");
                    assertEquals(1, all.stream().map(TopicReader::publisher).distinct().count(), "one relay published everything");
                    assertEquals(pid, lockHolderPid(), "still the same lock session");
                    assertTrue(holder.isActive() && !standby.isActive(), "the holder is still the one active relay");
                }
            } finally {
                built.countDown();   // before the relays close: a holder blocked in its build cannot stop
            }
        }
    }

    /** The backend that holds this test database's advisory lock (the relay's lock session), or -1. */
    private long lockHolderPid() {
        try (Connection c = stack.dataSource().getConnection(); Statement st = c.createStatement();
             java.sql.ResultSet rs = st.executeQuery("SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted"
                     + " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())")) {
            return rs.next() ? rs.getLong(1) : -1;
        } catch (java.sql.SQLException e) {
            throw new AssertionError("cannot read pg_locks", e);
        }
    }

    /**
     * A frozen active relay (SIGSTOP: every thread stopped, yet on loopback the kernel keeps its
     * TCP connections alive) must not hold the slot: under a steady stream of sends, the standby,
     * a separate process, publishes within {@link #FREEZE_TAKEOVER_BOUND} of the freeze; once
     * resumed, the old relay finds it lost the lock and sends nothing more (no split brain, even
     * of what its socket buffered meanwhile), and nothing committed is missing from the topic.
     */
    @Test
    void standbyTakesOverFromAFrozenRelayWithinTheBoundAndTheThawedOneIsFenced() throws Exception {
        Map<String, String> env = new HashMap<>(settings.explicitValues());
        env.put(ConfigKeys.PARTITIONS.name(), "3");
        AtomicBoolean sending = new AtomicBoolean(true);
        AtomicReference<Throwable> senderFailed = new AtomicReference<>();
        Map<String, AtomicLong> sent = Map.of("c1", new AtomicLong(), "c2", new AtomicLong());
        Thread sender = new Thread(() -> {
            try {
                for (int i = 0; sending.get(); i++) {
                    String conv = i % 2 == 0 ? "c1" : "c2";
                    sends.send(ana, conv, "load" + i, "steady send " + i);
                    sent.get(conv).incrementAndGet();
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));   // ~150 sends/s, not a busy loop
                }
            } catch (Throwable t) {
                senderFailed.set(t);
            }
        }, "steady-sender");
        try (TopicReader reader = new TopicReader(stack.kafkaBootstrap(), topics.events());
             RelayProcess a = RelayProcess.start("relay-a", env)) {
            sends.send(ana, "c1", "before", "before the freeze");
            reader.readUntil(Duration.ofSeconds(60), r -> reached(r, Map.of("c1", 3L, "c2", 1L)));
            Await.until(Duration.ofSeconds(10), () -> a.meter("im_relay_active") == 1, "relay-a active");
            String relayA = publisher(reader.records.get(0));
            try (RelayProcess b = RelayProcess.start("relay-b", env)) {
                Await.until(Duration.ofSeconds(30), () -> b.ready() && b.meter("im_relay_active") == 0, "relay-b a waiting standby");
                sender.start();
                int streaming = reader.records.size() + 50;
                reader.readUntil(Duration.ofSeconds(60), r -> r.size() >= streaming);

                a.signal("STOP");
                long frozenAt = System.nanoTime();
                reader.readUntil(FREEZE_TAKEOVER_BOUND,
                        r -> r.stream().anyMatch(x -> !publisher(x).equals(relayA)));
                System.out.printf("relay SIGSTOP under load: the standby published %d ms after the freeze%n",
                        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - frozenAt));
                assertEquals(1.0, b.meter("im_relay_active"), "relay-b holds the lock");

                long thawedAt = System.currentTimeMillis();
                a.signal("CONT");
                Await.until(Duration.ofSeconds(5), () -> a.meter("im_relay_active") == 0, "the thawed relay knows it lost the lock");
                Await.until(Duration.ofSeconds(5), () -> a.ready() && a.process.isAlive(), "relay-a went back to standby");
                sending.set(false);
                sender.join(30_000);
                if (senderFailed.get() != null) throw new AssertionError("a send failed", senderFailed.get());
                Map<String, Long> heads = Map.of("c1", 3L + sent.get("c1").get(), "c2", 1L + sent.get("c2").get());
                List<ConsumerRecord<String, String>> all = reader.readUntil(Duration.ofSeconds(60), r -> reached(r, heads));
                int dups = assertCompleteAndOrdered(all, heads);
                List<ConsumerRecord<String, String>> afterThaw = all.stream()
                        .filter(r -> publisher(r).equals(relayA) && r.timestamp() >= thawedAt).toList();
                assertEquals(List.of(), afterThaw, "the thawed relay sent nothing (it was fenced)");
                assertEquals(0.0, a.meter("im_relay_active"), "relay-a stays a standby");
                assertEquals(1.0, b.meter("im_relay_active"), "relay-b still the one active relay");
                System.out.printf("relay SIGSTOP under load: %d committed, %d records, %d duplicates%n",
                        heads.values().stream().mapToLong(Long::longValue).sum(), all.size(), dups);
            }
        } finally {
            sending.set(false);
            sender.join(30_000);
        }
    }

    @Test
    void killMinus9MidStreamThenRestartLosesNothing() throws Exception {
        int total = 300;
        AtomicInteger sent = new AtomicInteger();
        Thread sender = new Thread(() -> {
            for (int i = 0; i < total; i++) {
                sends.send(ana, i % 2 == 0 ? "c1" : "c2", "k" + i, "single-row commit " + i);
                sent.incrementAndGet();
            }
        });
        killRelayMidStream(total, sent, List.of(sender), "single-row");
    }

    /**
     * Group commit writes several events in one transaction, so one commit's changes are several
     * records of one Debezium batch: a relay killed in the middle of publishing them must, after
     * restart, publish every one (the offset it resumes from is a whole commit's, never half of one).
     */
    @Test
    void killMinus9WhileMultiRowTransactionsStreamThenRestartLosesNothing() throws Exception {
        int total = 400;
        int threads = 8;
        AtomicInteger sent = new AtomicInteger();
        try (SendService batched = new SendService(stack.dataSource(), Faults.none(), Clock.systemUTC(), 1, 64)) {
            List<Thread> senders = new java.util.ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int id = t;
                senders.add(new Thread(() -> {
                    for (int i = id; i < total; i += threads) {
                        batched.send(ana, i % 2 == 0 ? "c1" : "c2", "b" + i, "multi-row commit " + i);
                        sent.incrementAndGet();
                    }
                }));
            }
            killRelayMidStream(total, sent, senders, "multi-row");
            assertTrue(batched.transactions() < total / 2,
                    "sends shared transactions: " + total + " sends in " + batched.transactions() + " transactions");
            System.out.printf("relay kill -9 (multi-row): %d sends in %d transactions%n", total, batched.transactions());
        }
    }

    private void killRelayMidStream(int total, AtomicInteger sent, List<Thread> senders, String what) throws Exception {
        Map<String, String> env = new HashMap<>(settings.explicitValues());
        env.put(ConfigKeys.PARTITIONS.name(), "3");
        Process relay = startRelayProcess(env);
        try (TopicReader reader = new TopicReader(stack.kafkaBootstrap(), topics.events())) {
            senders.forEach(Thread::start);
            reader.readUntil(Duration.ofSeconds(90), r -> r.size() >= total / 3);
            relay.destroyForcibly();   // SIGKILL, mid-stream
            assertTrue(relay.waitFor(10, TimeUnit.SECONDS));
            assertEquals(137, relay.exitValue());
            int publishedBeforeKill = reader.records.size();
            relay = startRelayProcess(env);
            for (Thread t : senders) t.join(120_000);
            assertEquals(total, sent.get());
            Map<String, Long> heads = Map.of("c1", 2L + total / 2, "c2", 1L + total / 2);
            List<ConsumerRecord<String, String>> all = reader.readUntil(Duration.ofSeconds(120), r -> reached(r, heads));
            int dups = assertCompleteAndOrdered(all, heads);
            System.out.printf("relay kill -9 (%s): %d committed, %d on the topic before the kill, %d records in all, %d duplicates%n",
                    what, total, publishedBeforeKill, all.size(), dups);
        } finally {
            relay.destroyForcibly();
            relay.waitFor(10, TimeUnit.SECONDS);
        }
    }

    private static Process startRelayProcess(Map<String, String> env) throws Exception {
        return RelayProcess.start("relay", env).process;
    }
}
