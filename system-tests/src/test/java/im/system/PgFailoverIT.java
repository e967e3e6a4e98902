package im.system;

import im.gateway.Gateway;
import im.gateway.GatewayConfig;
import im.testkit.Await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.infra.ops.Metrics;
import im.client.ImClient;
import im.client.api.ClientOptions;
import im.client.api.SentAck;
import im.delivery.route.DeliveryConfig;
import im.delivery.route.DeliveryNode;
import im.embedded.EmbeddedPg;
import im.embedded.PgStandbyPair;
import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import im.infra.db.Database;
import im.infra.db.DbConfig;
import im.infra.fault.Faults;
import im.infra.kafka.SharedTopics;
import im.infra.kafka.TopicNames;
import im.store.directory.Directory;
import im.relay.CdcRelay;
import im.relay.RelayConfig;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.net.URI;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * PostgreSQL 17 primary + synchronous hot standby ({@link PgStandbyPair}); every role reaches it
 * through the multi-host URL with {@code targetServerType=primary}; the relay's slot is a failover
 * slot synced to the standby. Under a steady send load: the primary's postmaster is killed with
 * kill -9 and the standby promoted; or the standby crashes and comes back. Every message that got
 * {@code sent} exists with its seq, no seq gap, in-flight sends end with one row after the resend,
 * the relay resumes from the synced slot with no event missing on the topic, and the receiver
 * converges on the connection it had. The kill -> first {@code sent} / first push times are printed.
 */
@ExtendWith(ImStackExtension.class)
class PgFailoverIT {
    private static final String CONV = "c-ab";

    @Test
    void primaryKilledStandbyPromotedNothingAcknowledgedIsLost(TestStack stack, @TempDir Path dir) throws Exception {
        try (PgStandbyPair pair = PgStandbyPair.start(dir.resolve("pg")); Stack s = new Stack(stack, pair, dir)) {
            try (SteadyLoad load = s.load()) {
                Await.until(Duration.ofSeconds(60), () -> load.pushedAbove(20), "pushes flow before the fault");
                // The standby's copy of the slot becomes persistent once the relay has confirmed
                // positions past its creation, i.e. under traffic.
                pair.awaitSlotSynced(s.slot, Duration.ofSeconds(60));

                long before = load.highestConfirmed();
                long killedAt = System.nanoTime();
                pair.killPrimary();
                pair.promoteStandby();
                long promoteMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
                // A commit the standby had already acknowledged can still be answered by a backend of
                // the killed postmaster: measure from the head the new primary starts with.
                long promotedHead = head(pair.standby());
                Await.until(Duration.ofSeconds(60), () -> load.highestConfirmed() > promotedHead, "a send confirmed by the new primary");
                Await.until(Duration.ofSeconds(90), () -> load.pushedAbove(promotedHead), "a push of an event committed on the new primary");
                long toSent = load.msToFirstSentAbove(promotedHead, killedAt);
                long toPush = load.msToFirstPushAbove(promotedHead, killedAt);
                long after = load.highestConfirmed();
                Await.until(Duration.ofSeconds(30), () -> load.highestConfirmed() > after + 50, "sends go on");
                Result r = s.finish(load);
                // The relay streams from the slot the standby synced, not from one created after the promotion.
                try (Connection c = pair.standby().connect("fo"); PreparedStatement ps = c.prepareStatement(
                        "SELECT synced, failover, active FROM pg_replication_slots WHERE slot_name = ?")) {
                    ps.setString(1, s.slot);
                    try (ResultSet rs = ps.executeQuery()) {
                        assertTrue(rs.next(), "the slot exists on the new primary");
                        assertTrue(rs.getBoolean(1) && rs.getBoolean(2), "it is the synced failover slot");
                        assertTrue(rs.getBoolean(3), "the relay streams from it");
                    }
                }
                System.out.printf("PgFailoverIT primary kill: promote %d ms (head then %d, %d confirmed before the kill); kill -> first sent %d ms, first push %d ms of a commit on the new primary; "
                                + "%d confirmed, %d failed attempts, %d resent from the outbox, %d duplicates absorbed on the topic%n",
                        promoteMs, promotedHead, before, toSent, toPush, r.confirmed, load.failures(), r.resent, r.topicDuplicates);
            }
        }
    }

    @Test
    void aStandbyOutageBlocksCommitsAndLosesNothing(TestStack stack, @TempDir Path dir) throws Exception {
        try (PgStandbyPair pair = PgStandbyPair.start(dir.resolve("pg")); Stack s = new Stack(stack, pair, dir)) {
            try (SteadyLoad load = s.load()) {
                Await.until(Duration.ofSeconds(60), () -> load.pushedAbove(20), "pushes flow before the fault");
                pair.crashStandby();
                long down = System.nanoTime();
                // Synchronous commit: with the only standby gone no commit returns, so no new `sent`
                // (one send may have been past its commit when the standby went).
                long atCrash = load.highestConfirmed();
                Await.holdsFor(Duration.ofSeconds(3), () -> load.highestConfirmed() <= atCrash + 1, "no commit confirmed without the standby");
                assertTrue(load.failures() >= 0);
                pair.restartStandby();
                long blockedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - down);
                Await.until(Duration.ofSeconds(60), () -> load.highestConfirmed() > atCrash + 50, "sends go on once the standby is back");
                Result r = s.finish(load);
                System.out.printf("PgFailoverIT standby outage: standby down %d ms (no commit confirmed meanwhile); %d confirmed, %d failed attempts, %d resent%n",
                        blockedMs, r.confirmed, load.failures(), r.resent);
            }
        }
    }

    private static long head(EmbeddedPg pg) throws Exception {
        try (Connection c = pg.connect("fo"); PreparedStatement ps = c.prepareStatement("SELECT head_seq FROM conversations WHERE conv_id = ?")) {
            ps.setString(1, CONV);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    private record Result(int confirmed, int resent, int topicDuplicates) {}

    /** The roles in this JVM on the pair (through the multi-host URL) and the shared Kafka broker. */
    private static final class Stack implements AutoCloseable {
        final String slot;
        final Database db;
        final Settings settings;
        final TopicNames topics;
        final CdcRelay relay;
        final DeliveryNode node;
        final Gateway gw;
        final ImClient ana;
        final ImClient bo;

        Stack(TestStack stack, PgStandbyPair pair, Path dir) throws Exception {
            pair.primary().createDatabase("fo");
            String url = pair.jdbcUrl("fo");
            db = Database.open(new DbConfig(url, EmbeddedPg.USER, EmbeddedPg.PASSWORD, 8), "fo");
            Database.migrate(db.dataSource());
            Directory directory = new Directory(db.dataSource(), Clock.systemUTC());
            directory.createUser("u-ana", "ana");
            directory.createUser("u-bo", "bo");
            String anaToken = directory.registerDevice("u-ana", "d-ana").token();
            String boToken = directory.registerDevice("u-bo", "d-bo").token();
            directory.createConversation(CONV, "direct", List.of("u-ana", "u-bo"));
            slot = "s_fo_" + stack.database();
            stack.kafkaBootstrap();
            Map<String, String> m = Pipeline.roleSettings(slot);
            m.put(ConfigKeys.PG_URL.name(), url);
            m.put(ConfigKeys.PG_USER.name(), EmbeddedPg.USER);
            m.put(ConfigKeys.PG_PASSWORD.name(), EmbeddedPg.PASSWORD);
            settings = stack.settings(m);
            topics = TopicNames.from(settings);
            SharedTopics.create(settings.required(ConfigKeys.KAFKA_BOOTSTRAP), settings);
            relay = CdcRelay.start(RelayConfig.from(settings), topics, Metrics.detached());
            node = DeliveryNode.start(DeliveryConfig.from(settings), Metrics.detached());
            gw = Gateway.start(GatewayConfig.from(settings), db.dataSource(), Faults.none(), Clock.systemUTC());
            Await.until(Duration.ofSeconds(60), () -> relay.isActive() && node.isRunning(), "relay active, delivery node running");
            URI ws = URI.create("ws://127.0.0.1:" + gw.port() + "/ws");
            ana = ImClient.open(ClientOptions.of(ws, anaToken, dir.resolve("ana")));
            bo = ImClient.open(ClientOptions.of(ws, boToken, dir.resolve("bo")));
        }

        SteadyLoad load() throws Exception {
            SteadyLoad load = new SteadyLoad(ana, bo, CONV, 20);
            ana.connect();
            bo.connect();
            return load.start();
        }

        /** Stops the load, resends the outbox and checks the store, the topic and the receiver. */
        Result finish(SteadyLoad load) throws Exception {
            load.stop();
            int resent = ana.pending().size();
            List<SentAck> again = ana.resendPending();
            assertTrue(ana.pending().isEmpty(), "outbox empty after the resend");
            // The listener sees the resends' `sent` on the client's callback thread, maybe after this.
            Map<String, Long> acked = new HashMap<>(load.acknowledged());
            for (SentAck a : again) {
                Long before = acked.putIfAbsent(a.cmid(), a.seq());
                if (before != null) assertEquals(before, a.seq(), "a resend of " + a.cmid() + " keeps its seq");
            }

            Map<String, Long> stored = rows();
            for (Map.Entry<String, Long> a : acked.entrySet()) {
                assertEquals(a.getValue(), stored.get(a.getKey()), "acknowledged " + a.getKey() + " exists with its seq");
            }
            assertEquals(acked.keySet(), stored.keySet(), "every message once, nothing else");
            TreeSet<Long> seqs = new TreeSet<>(stored.values());
            assertEquals(stored.size(), seqs.size(), "no seq twice");
            long head = seqs.last();
            assertEquals(LongStream.rangeClosed(3, head).boxed().toList(), List.copyOf(seqs), "no seq gap");

            Await.until(Duration.ofSeconds(90), () -> bo.cursor(CONV) == head, "bo converged to " + head);
            assertEquals(LongStream.rangeClosed(2, head).boxed().toList(), bo.events(CONV).stream().map(e -> e.seq()).toList(),
                    "bo holds every event once, in order");
            assertEquals(1, load.receiverConnects(), "the receiver kept its connection");

            EventTopicCheck check = awaitTopicHead(head);
            assertEquals(Set.of(), check.missing(new TreeSet<>(stored.values())), "every stored message is on the events topic");
            assertEquals(List.of(), check.conflicts(), "a duplicate is always the same event");
            assertEquals(new TreeSet<>(LongStream.rangeClosed(1, head).boxed().toList()), check.bySeq().keySet(), "the topic holds 1.." + head);
            return new Result(acked.size(), resent, check.duplicates());
        }

        private EventTopicCheck awaitTopicHead(long head) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            String bootstrap = settings.required(ConfigKeys.KAFKA_BOOTSTRAP);
            while (true) {
                EventTopicCheck c = EventTopicCheck.read(bootstrap, topics.events(), CONV);
                if (c.contiguousTo(head) || System.nanoTime() > deadline) return c;
            }
        }

        private Map<String, Long> rows() throws Exception {
            Map<String, Long> m = new HashMap<>();
            try (Connection c = db.dataSource().getConnection();
                 PreparedStatement ps = c.prepareStatement("SELECT cmid, seq FROM events WHERE conv_id = ? AND kind = 'msg'")) {
                ps.setString(1, CONV);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) m.put(rs.getString(1), rs.getLong(2));
                }
            }
            return m;
        }

        @Override
        public void close() {
            ana.close();
            bo.close();
            gw.close();
            node.close();
            relay.close();
            db.close();
        }
    }
}
