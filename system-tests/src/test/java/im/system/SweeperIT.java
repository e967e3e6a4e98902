package im.system;

import im.gateway.Fixture;
import im.gateway.Gateway;
import im.testkit.Await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.client.ImClient;
import im.client.api.ClientListener;
import im.client.api.ClientOptions;
import im.infra.config.ConfigKeys;
import im.protocol.EventPush;
import im.protocol.Hint;
import im.protocol.ServerFrame;
import im.sweeper.SweeperMain;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * D5 end to end: a lost push is discovered by the sweeper and repaired (hint → sync → ack) within
 * bounded time, with no state that dies with a gateway or the sweeper.
 */
@ExtendWith(ImStackExtension.class)
class SweeperIT {
    /** The seed's bound: sweep every 500 ms, repaired within 3000 ms. */
    private static final Map<String, String> SWEEP = Map.of(
            ConfigKeys.SWEEP_MS.name(), "500",
            ConfigKeys.HINT_BACKOFF_MS.name(), "1000");
    private static final long BOUND_MS = 3000;

    private static long cursorRow(Fixture fx, String device, String conv) {
        return fx.count("SELECT COALESCE((SELECT delivered_seq FROM device_cursors WHERE device_id = ? AND conv_id = ?), -1)", device, conv);
    }

    private static ClientListener recorder(List<ServerFrame> into) {
        return new ClientListener() {
            @Override
            public void onPush(ServerFrame f) {
                into.add(f);
            }
        };
    }

    /** Sends one message and returns how long until bo's cursor row reached it (ms). */
    private static long sendAndTimeRepair(Fixture fx, ImClient ana, String body) throws Exception {
        long t0 = System.nanoTime();
        long seq = ana.send("c-ab", body).seq();
        Await.until(Duration.ofSeconds(30), () -> cursorRow(fx, "d-bo", "c-ab") == seq, "bo acked " + seq);
        return (System.nanoTime() - t0) / 1_000_000;
    }

    @Test
    void lostPushIsSweptAndRepairedWithinTheBound(TestStack stack, @TempDir Path dir) throws Exception {
        Fixture fx = new Fixture(stack);
        try (Pipeline p = new Pipeline(stack, SWEEP)) {
            p.addSweeper();
            Gateway gw = p.addGateway("gw-a", "gw.push:drop");     // every push is lost
            p.awaitRunning();
            List<ServerFrame> frames = new CopyOnWriteArrayList<>();
            try (ImClient ana = ImClient.open(ClientOptions.of(Pipeline.ws(gw), fx.anaToken, dir.resolve("ana")));
                 ImClient bo = ImClient.open(ClientOptions.of(Pipeline.ws(gw), fx.boToken, dir.resolve("bo")))) {
                bo.addListener(recorder(frames));
                ana.connect();
                bo.connect();
                Await.until(Duration.ofSeconds(30), () -> cursorRow(fx, "d-bo", "c-ab") == 2, "bo acked the join events");
                long repair = sendAndTimeRepair(fx, ana, "this push will be lost");
                System.out.printf("lost push repaired in %d ms (sweep 500 ms, bound %d ms)%n", repair, BOUND_MS);
                assertTrue(repair <= BOUND_MS, "repaired in " + repair + " ms");
                assertTrue(frames.stream().noneMatch(f -> f instanceof EventPush), "no push got through: " + frames);
                assertTrue(frames.stream().anyMatch(f -> f instanceof Hint && ((Hint) f).why().equals("sweep")), "a sweep hint came");
                assertEquals(3, bo.cursor("c-ab"));
                assertEquals(List.of(2L, 3L), bo.events("c-ab").stream().map(e -> e.seq()).toList());
                assertTrue(gw.droppedPushes() == 0, "dropped by the fault, not by the queue");
            }
        }
    }

    @Test
    void lostAckIsRepairedByHintSyncAndAckAgain(TestStack stack, @TempDir Path dir) throws Exception {
        Fixture fx = new Fixture(stack);
        try (Pipeline p = new Pipeline(stack, SWEEP)) {
            p.addSweeper();
            Gateway gw = p.addGateway("gw-a", "gw.ack:drop:0:1");  // bo's first ack is lost on the way
            p.awaitRunning();
            List<ServerFrame> frames = new CopyOnWriteArrayList<>();
            try (ImClient bo = ImClient.open(ClientOptions.of(Pipeline.ws(gw), fx.boToken, dir.resolve("bo")))) {
                bo.addListener(recorder(frames));
                bo.connect();
                Await.until(Duration.ofSeconds(30), () -> bo.cursor("c-ab") == 2, "bo stored the join events");
                Await.until(Duration.ofSeconds(30), () -> cursorRow(fx, "d-bo", "c-ab") == 2,
                        "the cursor reached the head although the first ack was lost");
                assertTrue(frames.stream().anyMatch(f -> f instanceof Hint), "the sweeper hinted: " + frames);
                assertEquals(List.of(2L), bo.events("c-ab").stream().map(e -> e.seq()).toList(), "the sync brought nothing new");
            }
        }
    }

    @Test
    void sweeperKilledAndRestartedStillRepairsWithinTheBound(TestStack stack, @TempDir Path dir) throws Exception {
        Fixture fx = new Fixture(stack);
        try (Pipeline p = new Pipeline(stack, SWEEP)) {
            Gateway gw = p.addGateway("gw-a", "gw.push:drop");
            p.awaitRunning();
            Process sweeper = startSweeper(p);
            try (ImClient ana = ImClient.open(ClientOptions.of(Pipeline.ws(gw), fx.anaToken, dir.resolve("ana")));
                 ImClient bo = ImClient.open(ClientOptions.of(Pipeline.ws(gw), fx.boToken, dir.resolve("bo")))) {
                ana.connect();
                bo.connect();
                Await.until(Duration.ofSeconds(30), () -> cursorRow(fx, "d-bo", "c-ab") == 2, "bo acked the join events");
                long before = sendAndTimeRepair(fx, ana, "repaired by the first sweeper");
                sweeper.destroyForcibly();                            // kill -9 mid-run
                assertTrue(sweeper.waitFor(10, TimeUnit.SECONDS));
                assertEquals(137, sweeper.exitValue());
                sweeper = startSweeper(p);                            // restores its stores from the changelogs
                long after = sendAndTimeRepair(fx, ana, "lost after the restart");
                System.out.printf("sweeper kill -9: repaired in %d ms before, %d ms after the restart%n", before, after);
                assertTrue(after <= BOUND_MS, "repaired in " + after + " ms after the restart");
            } finally {
                sweeper.destroyForcibly();
                sweeper.waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    /** A sweeper in its own JVM; returns once it reports RUNNING (stores restored, tasks assigned). */
    private static Process startSweeper(Pipeline p) throws Exception {
        return ChildRole.start(p.settings, SweeperMain.class, "IM_RUNNING sweeper");
    }
}
