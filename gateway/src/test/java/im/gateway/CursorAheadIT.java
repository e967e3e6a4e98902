package im.gateway;

import im.testkit.Await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import im.client.ImClient;
import im.client.api.ClientOptions;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * An ack refused with {@code CURSOR_AHEAD} is not held by the server, so the SDK must send it
 * again once the server's head covers it. The lagging head is made deterministic by moving
 * {@code conversations.head_seq} back while the device holds seq 3 (as when the cursor service
 * reads a head that has not caught up with a commit the device already got by push).
 */
@ExtendWith(ImStackExtension.class)
class CursorAheadIT {
    private static final Duration WAIT = Duration.ofSeconds(20);

    @Test
    void anAckRefusedCursorAheadIsSentAgainOnceTheHeadCoversIt(TestStack stack, @TempDir Path state) throws Exception {
        Fixture fx = new Fixture(stack);
        try (InProcessGateway gw = new InProcessGateway(stack);
             ImClient bo = ImClient.open(ClientOptions.of(gw.ws(), fx.boToken, state.resolve("bo")).withAutoReceive(false));
             ImClient ana = ImClient.open(ClientOptions.of(gw.ws(), fx.anaToken, state.resolve("ana"))
                     .withReconnectBackoff(Duration.ofMillis(50), Duration.ofMillis(200)))) {
            bo.connect();
            assertEquals(3, bo.send("c-ab", "three").seq());
            ana.connect();   // sub: head 3 above the empty store, so it syncs and acks 3
            Await.until(WAIT, () -> ana.cursor("c-ab") == 3 && delivered(fx) == 3, "ana holds and acked seq 3");
            ana.disconnect();

            // The server's cursor is gone and its head lags behind what the device holds.
            fx.count("WITH d AS (DELETE FROM device_cursors WHERE device_id = 'd-ana' RETURNING 1) SELECT count(*) FROM d");
            fx.count("WITH u AS (UPDATE conversations SET head_seq = 2 WHERE conv_id = 'c-ab' RETURNING 1) SELECT count(*) FROM u");
            long before = gw.gateway.cursorTransactions();
            ana.connect();   // subbed: delivered 0 below the cursor 3, so it acks 3: refused, CURSOR_AHEAD
            // No send holds the conversation's row: the ack's locking re-read refuses it in its one transaction.
            Await.until(WAIT, () -> gw.gateway.cursorTransactions() >= before + 1, "the ack of 3 was refused");
            assertEquals(-1, delivered(fx), "nothing written for a refused ack");

            fx.count("WITH u AS (UPDATE conversations SET head_seq = 3 WHERE conv_id = 'c-ab' RETURNING 1) SELECT count(*) FROM u");
            ana.syncNow("c-ab");   // the synced page reports head 3: the owed ack goes out again
            Await.until(WAIT, () -> delivered(fx) == 3, "the refused ack was sent again and taken");
            assertEquals(3, ana.cursor("c-ab"), "the local cursor never moved");
        }
    }

    /** d-ana's delivered cursor in c-ab, -1 without a row. */
    private static long delivered(Fixture fx) {
        return fx.count("SELECT coalesce(max(delivered_seq), -1) FROM device_cursors WHERE device_id = 'd-ana' AND conv_id = 'c-ab'");
    }
}
