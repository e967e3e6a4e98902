package im.gateway;

import im.testkit.Await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import im.client.ImClient;
import im.client.api.ClientListener;
import im.client.api.ClientOptions;
import im.client.api.ImErrorException;
import im.client.api.PendingSend;
import im.client.api.SentAck;
import im.protocol.ErrorCode;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The SDK's end of a send that cannot succeed: an outbox entry refused terminally, or answered
 * INTERNAL again and again, leaves the outbox and is reported to {@code onSendFailed}, so no
 * entry is resent forever. INTERNAL comes from the {@code send.before_insert:fail} fault rule
 * (an unexpected exception inside the send transaction, as a bug would throw).
 */
@ExtendWith(ImStackExtension.class)
class SendFailureIT {
    private static final Duration WAIT = Duration.ofSeconds(20);

    /** Records the callbacks the application sees. */
    private static final class Seen implements ClientListener {
        final List<PendingSend> failed = new CopyOnWriteArrayList<>();
        final List<ImErrorException> causes = new CopyOnWriteArrayList<>();
        final List<SentAck> sent = new CopyOnWriteArrayList<>();

        @Override
        public void onSendFailed(PendingSend entry, ImErrorException cause) {
            failed.add(entry);
            causes.add(cause);
        }

        @Override
        public void onSent(SentAck ack) {
            sent.add(ack);
        }
    }

    @Test
    void aNulBodyLeftByAnOlderClientIsRefusedOnResendAndReportedAsFailed(TestStack stack, @TempDir Path state) throws Exception {
        Fixture fx = new Fixture(stack);
        // An SDK from before the local NUL check (and the SQLite store) wrote this entry; the current one
        // imports it at open and resends it after connect.
        ObjectMapper json = new ObjectMapper();
        ObjectNode file = json.createObjectNode().put("version", 1);
        file.putArray("entries").addObject().put("cmid", "m-nul").put("conv", "c-ab").put("body", "a\u0000b")
                .put("createdAtMillis", 1L);
        Files.write(state.resolve("outbox.json"), json.writeValueAsBytes(file));
        Seen seen = new Seen();
        try (InProcessGateway gw = new InProcessGateway(stack);
             ImClient c = ImClient.open(ClientOptions.of(gw.ws(), fx.anaToken, state).withAutoReceive(false))) {
            c.addListener(seen);
            assertEquals(1, c.pending().size());
            c.connect();
            Await.until(WAIT, () -> !seen.failed.isEmpty(), "the refused entry is reported to onSendFailed");
            assertEquals("m-nul", seen.failed.get(0).cmid());
            assertEquals(ErrorCode.BAD_FIELD, seen.causes.get(0).code());
            assertTrue(c.pending().isEmpty(), "the entry left the outbox");
            assertTrue(c.resendPending().isEmpty(), "nothing left to resend");
            assertEquals(1, seen.failed.size(), "reported once");
        }
        assertEquals(0, fx.messages(), "no row");
        try (ImClient reopened = ImClient.open(ClientOptions.of(URI.create("ws://127.0.0.1:9/ws"), fx.anaToken, state))) {
            assertTrue(reopened.pending().isEmpty(), "removed durably");
        }
    }

    @Test
    void internalAnswersAreRetriedWithBackoffThenTheEntryIsGivenUp(TestStack stack, @TempDir Path state) throws Exception {
        Fixture fx = new Fixture(stack);
        Duration backoff = Duration.ofMillis(200);
        Seen seen = new Seen();
        // Exactly three failures: a fourth attempt would commit, so a cap above 3 fails this test.
        try (InProcessGateway gw = new InProcessGateway(stack, "send.before_insert:fail:0:3", Map.of());
             ImClient c = ImClient.open(ClientOptions.of(gw.ws(), fx.anaToken, state).withAutoReceive(false)
                     .withReconnectBackoff(backoff, Duration.ofSeconds(1)).withMaxInternalErrors(3))) {
            c.addListener(seen);
            c.connect();
            long t0 = System.nanoTime();
            ImErrorException first = assertThrows(ImErrorException.class, () -> c.send("c-ab", "hits a bug"));
            assertEquals(ErrorCode.INTERNAL, first.code());
            Await.until(WAIT, () -> !seen.failed.isEmpty(), "given up after three INTERNAL answers");
            long tookMs = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(tookMs >= 2 * backoff.toMillis(), "two retries, each after at least the backoff: " + tookMs + " ms");
            assertEquals(3, seen.failed.get(0).internalErrors());
            assertEquals("hits a bug", seen.failed.get(0).body());
            assertEquals(ErrorCode.INTERNAL, seen.causes.get(0).code());
            assertTrue(c.pending().isEmpty(), "the entry left the outbox");
            assertTrue(seen.sent.isEmpty());

            // The fault is spent: the next message commits, with the seq the failed attempts never consumed.
            SentAck next = c.send("c-ab", "after the bug");
            assertEquals(3, next.seq());
            c.disconnect();
            c.connect();   // a reconnect resends the outbox: the given-up entry is not in it
            assertTrue(c.resendPending().isEmpty());
        }
        assertEquals(1, fx.messages(), "only the later message was stored");
    }

    @Test
    void oneInternalAnswerIsRetriedByTheClientAndCommits(TestStack stack, @TempDir Path state) throws Exception {
        Fixture fx = new Fixture(stack);
        Seen seen = new Seen();
        try (InProcessGateway gw = new InProcessGateway(stack, "send.before_insert:fail:0:1", Map.of());
             ImClient c = ImClient.open(ClientOptions.of(gw.ws(), fx.anaToken, state).withAutoReceive(false)
                     .withReconnectBackoff(Duration.ofMillis(50), Duration.ofMillis(200)))) {
            c.addListener(seen);
            c.connect();
            assertEquals(ErrorCode.INTERNAL, assertThrows(ImErrorException.class, () -> c.send("c-ab", "once")).code());
            assertEquals(1, c.pending().size(), "INTERNAL keeps the entry");
            Await.until(WAIT, () -> c.pending().isEmpty(), "retried without being asked");
            Await.until(WAIT, () -> !seen.sent.isEmpty(), "and confirmed");
            assertFalse(seen.sent.get(0).dup());
            assertTrue(seen.failed.isEmpty());
        }
        assertEquals(1, fx.messages());
    }
}
