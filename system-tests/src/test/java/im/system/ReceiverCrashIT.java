package im.system;

import im.gateway.Fixture;
import im.gateway.Gateway;
import im.testkit.Await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.FaultInjection;
import im.client.ImClient;
import im.client.api.ClientOptions;
import im.client.internal.ClientFaults;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The failure table's receiving-device rows: the device process dies before it saved a pushed
 * event, or after saving and before acking. A restarted device (a new client on the same state
 * directory) converges: contiguous local store, each event once, cursor at the head, and the
 * server's cursor never claimed more than the device had stored (D3).
 */
@ExtendWith(ImStackExtension.class)
class ReceiverCrashIT {
    private static long cursorRow(Fixture fx) {
        return fx.count("SELECT COALESCE((SELECT delivered_seq FROM device_cursors WHERE device_id = 'd-bo' AND conv_id = 'c-ab'), -1)");
    }

    /** Dies (throws from the hook) the first time a batch containing seq 3 arrives. */
    private static final class DieOnSeq3 implements ClientFaults {
        final boolean beforeSave;
        final AtomicBoolean died = new AtomicBoolean();

        DieOnSeq3(boolean beforeSave) {
            this.beforeSave = beforeSave;
        }

        @Override
        public void beforeStore(String conv, List<Long> seqs) {
            if (beforeSave && seqs.contains(3L) && died.compareAndSet(false, true)) throw new IllegalStateException("crash before save");
        }

        @Override
        public void afterStoreBeforeAck(String conv, long cursor) {
            if (!beforeSave && cursor >= 3 && died.compareAndSet(false, true)) throw new IllegalStateException("crash after save, before ack");
        }
    }

    private void crashThenRestartConverges(TestStack stack, Path dir, boolean beforeSave) throws Exception {
        Fixture fx = new Fixture(stack);
        DieOnSeq3 fault = new DieOnSeq3(beforeSave);
        try (Pipeline p = new Pipeline(stack, Map.of())) {
            Gateway gw = p.addGateway("gw-a", "");
            p.awaitRunning();
            try (ImClient ana = ImClient.open(ClientOptions.of(Pipeline.ws(gw), fx.anaToken, dir.resolve("ana")))) {
                ana.connect();
                ImClient bo = FaultInjection.open(ClientOptions.of(Pipeline.ws(gw), fx.boToken, dir.resolve("bo")), fault);
                bo.connect();
                Await.until(Duration.ofSeconds(30), () -> cursorRow(fx) == 2, "bo acked the join events");
                ana.send("c-ab", "the device dies around this one");                 // seq 3
                Await.until(Duration.ofSeconds(30), fault.died::get, "the device died");
                Await.until(Duration.ofSeconds(10), () -> !bo.isConnected(), "its socket is gone");
                bo.close();
                assertTrue(cursorRow(fx) <= 2, "the server never counts seq 3 as delivered before the device stored and acked it");
                for (int i = 0; i < 3; i++) ana.send("c-ab", "while it was down " + i);   // 4..6

                try (ImClient restarted = ImClient.open(ClientOptions.of(Pipeline.ws(gw), fx.boToken, dir.resolve("bo")))) {
                    if (beforeSave) assertEquals(2, restarted.cursor("c-ab"), "nothing of seq 3 was saved");
                    else assertEquals(3, restarted.cursor("c-ab"), "seq 3 was saved before the crash");
                    restarted.connect();
                    Await.until(Duration.ofSeconds(30), () -> restarted.cursor("c-ab") == 6, "restarted device caught up");
                    Await.until(Duration.ofSeconds(30), () -> cursorRow(fx) == 6, "and acked the head");
                    assertEquals(List.of(2L, 3L, 4L, 5L, 6L), restarted.events("c-ab").stream().map(e -> e.seq()).toList(),
                            "contiguous, each event once (a duplicate delivery was absorbed by seq)");
                }
            }
        }
        assertTrue(fault.died.get());
    }

    @Test
    void deviceCrashBeforeSavingConvergesAfterRestart(TestStack stack, @TempDir Path dir) throws Exception {
        crashThenRestartConverges(stack, dir, true);
    }

    @Test
    void deviceCrashAfterSavingBeforeAckingConvergesAfterRestart(TestStack stack, @TempDir Path dir) throws Exception {
        crashThenRestartConverges(stack, dir, false);
    }
}
