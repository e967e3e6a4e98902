package im.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.ImClient;
import im.client.api.ClientOptions;
import im.client.api.ConnectionLostException;
import im.client.api.SentAck;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The seed's three crash points (brief §6): a gateway in its own JVM halts with exit code 137 at
 * the named point; a new client instance, loaded from the first one's state directory like a
 * restarted process, resends its outbox to a healthy gateway.
 */
@ExtendWith(ImStackExtension.class)
class SendCrashIT {
    @ParameterizedTest(name = "{0}: rows {1} -> 1, dup={2}")
    @CsvSource({
            "send.before_insert,    0, false",
            "send.before_commit,    0, false",
            "api.after_send_commit, 1, true"})
    void crashThenResendFromTheDurableOutbox(String point, long rowsAfterCrash, boolean dupOnResend,
                                             TestStack stack, @TempDir Path state) throws Exception {
        Fixture fx = new Fixture(stack);
        long headBefore = fx.head("c-ab");
        String cmid;
        try (GatewayProcess faulty = GatewayProcess.start(stack, point + ":halt")) {
            ImClient first = ImClient.open(ClientOptions.of(faulty.ws(), fx.anaToken, state).withAutoReconnect(false));
            first.connect();
            IOException e = assertThrows(IOException.class, () -> first.send("c-ab", "survives a crash", Duration.ofSeconds(10)));
            assertTrue(e instanceof ConnectionLostException, "no reply, the connection dropped: " + e);
            assertEquals(137, faulty.awaitExit(Duration.ofSeconds(30)), "halted at " + point);
            assertEquals(1, first.pending().size(), "the outbox entry was written before the first attempt");
            cmid = first.pending().get(0).cmid();
            first.close();
        }
        assertEquals(rowsAfterCrash, fx.messages(), "rows right after the crash");

        try (InProcessGateway healthy = new InProcessGateway(stack);
             ImClient restarted = ImClient.open(ClientOptions.of(healthy.ws(), fx.anaToken, state).withAutoReconnect(false))) {
            assertEquals(cmid, restarted.pending().get(0).cmid(), "the restarted client loaded the same entry");
            restarted.connect();
            List<SentAck> acks = restarted.resendPending();
            assertEquals(1, acks.size());
            SentAck ack = acks.get(0);
            assertEquals(cmid, ack.cmid());
            assertEquals(dupOnResend, ack.dup());
            assertEquals(headBefore + 1, ack.seq(), "no seq was consumed by the crashed attempt, none skipped");
            assertTrue(restarted.pending().isEmpty(), "outbox empty after the resend");
        }
        assertEquals(1, fx.messages(), "exactly one row in the end (D2)");
        assertEquals(1, fx.count("SELECT count(*) FROM events WHERE cmid = ?", cmid));
        assertEquals(headBefore + 1, fx.head("c-ab"));
    }

    @ParameterizedTest(name = "outbox survives a client restart before any attempt ({0})")
    @CsvSource({"enqueue"})
    void outboxWrittenBeforeFirstAttemptSurvivesClientRestart(String how, TestStack stack, @TempDir Path state) throws Exception {
        Fixture fx = new Fixture(stack);
        try (InProcessGateway gw = new InProcessGateway(stack)) {
            String cmid;
            try (ImClient c = ImClient.open(ClientOptions.of(gw.ws(), fx.anaToken, state))) {
                cmid = c.enqueue("c-ab", "written, never sent");
            }
            try (ImClient c = ImClient.open(ClientOptions.of(gw.ws(), fx.anaToken, state).withAutoReconnect(false))) {
                c.connect();
                SentAck ack = c.resendPending().get(0);
                assertEquals(cmid, ack.cmid());
                assertFalse(ack.dup());
                assertTrue(c.pending().isEmpty());
            }
        }
        assertEquals(1, fx.messages());
    }

    /**
     * Group commit: a gateway with one send lane halts before the COMMIT of a transaction holding
     * several sends of one conversation (concurrent senders). None of that batch is committed;
     * every confirmed send is (D1); after the clients, restarted from their state directories,
     * resend their outboxes to a healthy gateway, every message is stored once (D2) and the
     * conversation's seqs have no gap.
     */
    @org.junit.jupiter.api.Test
    void aCrashInTheMiddleOfABatchCommitsNoneOfItAndTheResendsLeaveNoGap(TestStack stack, @TempDir Path state) throws Exception {
        Fixture fx = new Fixture(stack);
        long headBefore = fx.head("c-ab");
        int clients = 6;
        java.util.Set<Long> confirmed = java.util.concurrent.ConcurrentHashMap.newKeySet();
        try (GatewayProcess faulty = GatewayProcess.start(stack, "send.batch_before_commit:halt",
                java.util.Map.of(im.infra.config.ConfigKeys.SEND_LANES.name(), "1"))) {
            java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(clients);
            try {
                List<java.util.concurrent.Future<?>> fs = new java.util.ArrayList<>();
                for (int i = 0; i < clients; i++) {
                    String token = i % 2 == 0 ? fx.anaToken : fx.boToken;
                    Path dir = state.resolve("client-" + i);
                    fs.add(pool.submit(() -> {
                        try (ImClient c = ImClient.open(ClientOptions.of(faulty.ws(), token, dir).withAutoReconnect(false))) {
                            c.connect();
                            for (int k = 0; k < 10_000; k++) confirmed.add(c.send("c-ab", "m" + k, Duration.ofSeconds(10)).seq());
                        } catch (IOException expected) {
                            // the gateway halted: this send's outcome is unknown, the entry stays in the outbox
                        }
                        return null;
                    }));
                }
                assertEquals(137, faulty.awaitExit(Duration.ofSeconds(60)), "halted before a batch's commit");
                for (java.util.concurrent.Future<?> f : fs) f.get(30, java.util.concurrent.TimeUnit.SECONDS);
            } finally {
                pool.shutdownNow();
            }
            assertTrue(faulty.output().contains("IM_FAULT: halting at send.batch_before_commit"), faulty.output());
        }
        long head = fx.head("c-ab");
        for (long seq : confirmed) assertTrue(seq > headBefore && seq <= head, "confirmed seq " + seq + " is committed (D1)");
        assertEquals(head - headBefore, fx.messages(), "the committed messages are exactly the seqs after the old head");

        int resent = 0;
        try (InProcessGateway healthy = new InProcessGateway(stack)) {
            for (int i = 0; i < clients; i++) {
                String token = i % 2 == 0 ? fx.anaToken : fx.boToken;
                try (ImClient c = ImClient.open(ClientOptions.of(healthy.ws(), token, state.resolve("client-" + i)).withAutoReconnect(false))) {
                    c.connect();
                    int pending = c.pending().size();
                    assertTrue(pending <= 1, "one send in flight per client: " + pending);
                    resent += c.resendPending().size();
                    assertTrue(c.pending().isEmpty());
                }
            }
        }
        assertTrue(resent >= 2, "the batch held at least two unconfirmed sends: " + resent);
        long end = fx.head("c-ab");
        assertEquals(end - headBefore, fx.messages(), "every message once (D2), seqs " + (headBefore + 1) + ".." + end + " without a gap");
        assertEquals(0, fx.count("SELECT count(*) FROM (SELECT sender, cmid FROM events WHERE kind = 'msg'"
                + " GROUP BY sender, cmid HAVING count(*) > 1) d"), "no cmid twice");
        assertEquals(end, fx.count("SELECT count(DISTINCT seq) FROM events WHERE conv_id = 'c-ab'"), "seqs 1.." + end + " all present");
    }
}
