package im.gateway;

import im.testkit.Await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.ImClient;
import im.client.api.ClientListener;
import im.client.api.ClientOptions;
import im.client.api.SendTimeoutException;
import im.client.api.SentAck;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** The seed's lost reply: the gateway drops one {@code sent}; the client times out and resends. */
@ExtendWith(ImStackExtension.class)
class LostReplyIT {
    @Test
    void droppedSentReplyTimesOutAndTheResendIsADup(TestStack stack, @TempDir Path state) throws Exception {
        Fixture fx = new Fixture(stack);
        try (InProcessGateway gw = new InProcessGateway(stack, "gw.reply.send:drop:0:1", Map.of());
             ImClient c = ImClient.open(ClientOptions.of(gw.ws(), fx.anaToken, state).withAutoReconnect(false))) {
            c.connect();
            long t0 = System.nanoTime();
            assertThrows(SendTimeoutException.class, () -> c.send("c-ab", "reply lost", Duration.ofMillis(1500)));
            long waited = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(waited >= 1500 && waited < 5000, "timed out after the 1500 ms budget, took " + waited);
            assertEquals(1, fx.messages(), "the send committed although its reply was lost");
            assertEquals(1, c.pending().size(), "a timeout keeps the outbox entry");
            List<SentAck> acks = c.resendPending();
            assertEquals(1, acks.size());
            assertTrue(acks.get(0).dup(), "the resend is answered dup:true");
            assertEquals(3, acks.get(0).seq(), "with the original seq");
            assertTrue(c.pending().isEmpty());
        }
        assertEquals(1, fx.messages(), "one row");
    }

    @Test
    void afterAReconnectPendingEntriesAreResentAutomatically(TestStack stack, @TempDir Path state) throws Exception {
        Fixture fx = new Fixture(stack);
        List<SentAck> seen = new CopyOnWriteArrayList<>();
        try (InProcessGateway gw = new InProcessGateway(stack, "gw.reply.send:drop:0:1", Map.of());
             ImClient c = ImClient.open(ClientOptions.of(gw.ws(), fx.anaToken, state)
                     .withReconnectBackoff(Duration.ofMillis(50), Duration.ofMillis(200)))) {
            c.addListener(new ClientListener() {
                @Override
                public void onSent(SentAck ack) {
                    seen.add(ack);
                }
            });
            c.connect();
            assertThrows(SendTimeoutException.class, () -> c.send("c-ab", "auto", Duration.ofMillis(500)));
            assertEquals(1, c.pending().size());
            c.disconnect();
            c.connect();
            Await.until(Duration.ofSeconds(10), () -> c.pending().isEmpty(), "resent after reconnect without being asked");
            // Listener callbacks run on the client's own thread, after the entry left the outbox.
            Await.until(Duration.ofSeconds(10), () -> seen.stream().anyMatch(SentAck::dup), "the automatic resend was a dup");
        }
        assertEquals(1, fx.messages());
    }
}
