package im.store.cursor;

import im.protocol.ErrorCode;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.infra.identity.DevicePrincipal;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(ImStackExtension.class)
class CursorWriterIT {
    private DataSource db;
    private final DevicePrincipal bo = new DevicePrincipal("u-bo", "d-bo", 1);
    private final DevicePrincipal cy = new DevicePrincipal("u-cy", "d-cy", 1);

    @BeforeEach
    void setUp(TestStack stack) throws Exception {
        db = stack.dataSource();
        sql("INSERT INTO users (user_id) VALUES ('u-bo'), ('u-cy')",
            "INSERT INTO devices (device_id, user_id, token_hash) VALUES ('d-bo', 'u-bo', '\\x01'), ('d-cy', 'u-cy', '\\x02')",
            "INSERT INTO conversations (conv_id, kind, head_seq) VALUES ('c1', 'group', 7), ('c2', 'group', 3)",
            "INSERT INTO memberships (conv_id, user_id, from_seq) VALUES ('c1', 'u-bo', 1), ('c2', 'u-bo', 1)");
    }

    private void sql(String... statements) throws Exception {
        try (Connection c = db.getConnection(); Statement st = c.createStatement()) {
            for (String s : statements) st.execute(s);
        }
    }

    private static ErrorCode reason(CompletableFuture<Long> f) throws Exception {
        try {
            f.get(10, TimeUnit.SECONDS);
            throw new AssertionError("expected a refusal");
        } catch (ExecutionException e) {
            return ((AckRejectedException) e.getCause()).errorCode();
        }
    }

    @Test
    void anAckThatMovesAnExistingCursorSamplesTheAgeOfTheFirstEventItNewlyCovers() throws Exception {
        // Event s of c1 was committed 10 - s seconds ago.
        sql("INSERT INTO events (conv_id, seq, kind, mid, sender, cmid, body, created_at)"
            + " SELECT 'c1', s, 'msg', gen_random_uuid(), 'u-bo', 'm' || s, 'x', clock_timestamp() - make_interval(secs => 10 - s)"
            + " FROM generate_series(1, 7) s");
        io.micrometer.core.instrument.simple.SimpleMeterRegistry meters = new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
        CursorService service = new CursorService(db, CursorSink.NONE, meters, io.micrometer.core.instrument.Tags.of("gateway", "gw-t"));
        io.micrometer.core.instrument.Timer latency = meters.get("im.delivery.latency").tag("gateway", "gw-t").timer();

        service.ack(bo, "c1", 2);
        assertEquals(0, latency.count(), "a first cursor is history (a join, a reinstall), not a delivery");
        service.ack(bo, "c1", 5);
        assertEquals(1, latency.count());
        double seconds = latency.max(TimeUnit.SECONDS);
        assertTrue(seconds >= 7 && seconds < 9, "event 3, the first newly covered, is 7 s old: " + seconds);
        service.ack(bo, "c1", 4);
        assertEquals(1, latency.count(), "an ack that moves nothing delivers nothing");
        // Only the batch's first ack is sampled: here it is refused, so bo's advance is not.
        service.ackBatch(List.of(new AckRequest(cy, "c1", 1), new AckRequest(bo, "c1", 7)));
        assertEquals(1, latency.count());
        assertEquals(7, service.ack(bo, "c1", 7));
    }

    /**
     * A device can ack a push before the send it acknowledges is visible to a new snapshot (logical
     * decoding streams a commit a moment before the transaction is visible). Here the "send" is a
     * transaction that has moved the head and not committed yet: the ack waits for it, however
     * long, and is accepted once it commits; an ack of a seq no send is writing is refused at once.
     * Before, the writer re-checked 3 times 20 ms apart, and a sender slower than that (a saturated
     * machine) made a valid ack CURSOR_AHEAD.
     */
    @Test
    void anAckOfASendThatIsNotVisibleYetWaitsForItInsteadOfBeingRefused() throws Exception {
        CursorService service = new CursorService(db);
        try (Connection sender = db.getConnection(); Statement st = sender.createStatement()) {
            sender.setAutoCommit(false);
            st.execute("UPDATE conversations SET head_seq = 8 WHERE conv_id = 'c1'");
            CompletableFuture<Long> ack = CompletableFuture.supplyAsync(() -> service.ack(bo, "c1", 8));
            // The ack's transaction blocks on the sender's row lock (or, refused at once, completes).
            im.testkit.Await.until(Duration.ofSeconds(10), () -> ack.isDone() || waitingOnALock(),
                    "the ack waits on a lock or completes");
            assertTrue(!ack.isDone(), "the ack waits for the send: " + (ack.isDone() ? ack.handle((v, e) -> v + " / " + e).join() : ""));
            sender.commit();
            assertEquals(8, ack.get(10, TimeUnit.SECONDS));
        }
        long t0 = System.nanoTime();
        try {
            service.ack(bo, "c1", 9);
            throw new AssertionError("expected a refusal");
        } catch (AckRejectedException e) {
            assertEquals(ErrorCode.CURSOR_AHEAD, e.errorCode());
        }
        assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(1), "no send in flight: refused at once");
    }

    @Test
    void aBatchMergesPerDeviceAndConversationAndRefusesOnlyTheBadOnes() throws Exception {
        CursorService service = new CursorService(db);
        List<CursorService.Outcome> out = service.ackBatch(List.of(
                new AckRequest(bo, "c1", 5), new AckRequest(bo, "c1", 7), new AckRequest(bo, "c1", 2),
                new AckRequest(bo, "c2", 9), new AckRequest(cy, "c1", 1), new AckRequest(bo, "c-none", 1),
                new AckRequest(new DevicePrincipal("u-bo", "d-bo", 2), "c1", 1), new AckRequest(bo, "c2", 3)));
        assertEquals(7, out.get(0).delivered(), "merged: the largest ack of the batch");
        assertEquals(7, out.get(1).delivered());
        assertEquals(7, out.get(2).delivered(), "a smaller ack gets the merged value back");
        assertEquals(ErrorCode.CURSOR_AHEAD, out.get(3).rejected().errorCode());
        assertEquals(ErrorCode.NOT_MEMBER, out.get(4).rejected().errorCode());
        assertEquals(ErrorCode.UNKNOWN_CONV, out.get(5).rejected().errorCode());
        assertEquals(ErrorCode.STALE_INSTALL, out.get(6).rejected().errorCode());
        assertEquals(3, out.get(7).delivered());
        assertEquals(1, service.ack(bo, "c1", 1) == 7 ? 1 : 0, "monotonic across batches");
    }

    @Test
    void concurrentAcksAreGroupCommitted() throws Exception {
        try (CursorWriter w = new CursorWriter(new CursorService(db), Duration.ofMillis(20), 256, 1).start()) {
            List<CompletableFuture<Long>> fs = new ArrayList<>();
            for (int i = 1; i <= 7; i++) fs.add(w.ack(bo, "c1", i));
            for (CompletableFuture<Long> f : fs) assertTrue(f.get(10, TimeUnit.SECONDS) >= 1);
            assertEquals(7, fs.get(6).get());
            assertEquals(7, w.acks());
            assertTrue(w.transactions() < 7, "fewer transactions than acks: " + w.transactions());
        }
    }

    /**
     * The per-pair throttle: the first ack of a pair goes at once; acks of the same pair within
     * the interval wait together and are written in one row write (each answered with the merged
     * cursor); another pair is not held back.
     */
    @Test
    void aThrottledPairIsWrittenOncePerIntervalWithEveryAckOfItAnsweredWhenWritten() throws Exception {
        try (CursorWriter w = new CursorWriter(new CursorService(db), Duration.ZERO, 256, 1, Duration.ofMillis(700)).start()) {
            assertEquals(1, w.ack(bo, "c1", 1).get(10, TimeUnit.SECONDS), "the first ack is not held");
            assertEquals(0, w.heldAcks());
            CompletableFuture<Long> second = w.ack(bo, "c1", 2);
            CompletableFuture<Long> third = w.ack(bo, "c1", 3);
            assertEquals(2, w.heldAcks(), "acks of the pair within the interval wait");
            assertEquals(2, w.ack(bo, "c2", 2).get(10, TimeUnit.SECONDS), "another pair goes at once");
            assertEquals(2, w.heldAcks());
            assertEquals(3, second.get(10, TimeUnit.SECONDS), "written together with the third: the merged cursor");
            assertEquals(3, third.get(10, TimeUnit.SECONDS));
            assertEquals(3, one("SELECT delivered_seq FROM device_cursors WHERE device_id = 'd-bo' AND conv_id = 'c1'"));
            assertEquals(3, w.transactions(), "c1 twice (first, then the held pair once), c2 once");
        }
    }

    @Test
    void heldAcksAreWrittenWhenTheWriterCloses() throws Exception {
        CompletableFuture<Long> held;
        try (CursorWriter w = new CursorWriter(new CursorService(db), Duration.ZERO, 256, 1, Duration.ofSeconds(60)).start()) {
            w.ack(bo, "c1", 1).get(10, TimeUnit.SECONDS);
            held = w.ack(bo, "c1", 4);
            assertEquals(1, w.heldAcks());
        }
        assertEquals(4, held.get(10, TimeUnit.SECONDS), "not dropped: written on close");
        assertEquals(4, one("SELECT delivered_seq FROM device_cursors WHERE device_id = 'd-bo' AND conv_id = 'c1'"));
    }

    /**
     * An ack that does not move the cursor (a repeated ack, a smaller one after a restore) leaves
     * the row alone: no new row version, so no WAL, no CDC record on the cursors topic and no
     * reviewed D3 evidence rewritten. The reply still carries the stored (larger) cursor.
     */
    @Test
    void anAckThatDoesNotAdvanceTheCursorWritesNothing() throws Exception {
        CursorService service = new CursorService(db);
        assertEquals(5, service.ack(bo, "c1", 5));
        String version = "SELECT xmin::text::bigint FROM device_cursors WHERE device_id = 'd-bo' AND conv_id = 'c1'";
        long written = one(version);
        assertEquals(5, service.ack(bo, "c1", 5), "the same ack again");
        assertEquals(5, service.ack(bo, "c1", 3), "a smaller ack gets the stored cursor back");
        List<CursorService.Outcome> out = service.ackBatch(List.of(new AckRequest(bo, "c1", 4), new AckRequest(bo, "c2", 2)));
        assertEquals(5, out.get(0).delivered());
        assertEquals(2, out.get(1).delivered(), "the other pair of the batch is written");
        assertEquals(written, one(version), "no new version of the row");
        assertEquals(6, service.ack(bo, "c1", 6), "an advancing ack still writes");
        assertTrue(one(version) != written, "a new version");
        sql("UPDATE devices SET install_epoch = 2 WHERE device_id = 'd-bo'");
        assertEquals(1, service.ack(new DevicePrincipal("u-bo", "d-bo", 2), "c1", 1),
                "a new install's ack replaces the old install's larger cursor");
    }

    /** Whether a backend of this database waits for a lock (the ack behind the sender's row lock). */
    private boolean waitingOnALock() {
        try {
            return one("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'") > 0;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private long one(String query) throws Exception {
        try (Connection c = db.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(query)) {
            return rs.next() ? rs.getLong(1) : -1;
        }
    }

    @Test
    void aFormerMembersAckStopsAtTheEndOfTheirLastPeriod() throws Exception {
        sql("UPDATE memberships SET to_seq = 4 WHERE conv_id = 'c1' AND user_id = 'u-bo'");   // bo left at seq 4; head 7
        CursorService service = new CursorService(db);
        assertEquals(4, service.ack(bo, "c1", 7), "capped at the last seq bo may see, not the head");
        assertEquals(4, one("SELECT delivered_seq FROM device_cursors WHERE device_id = 'd-bo' AND conv_id = 'c1'"));
        assertEquals(4, service.ack(bo, "c1", 3), "a smaller ack gets the stored value");
        sql("INSERT INTO memberships (conv_id, user_id, from_seq) VALUES ('c1', 'u-bo', 6)");   // rejoined at 6
        assertEquals(7, service.ack(bo, "c1", 7), "a current member acks up to the head");
    }

    @Test
    void anAckRacingAReinstallNeverLeavesACursorOfTheOldInstall() throws Exception {
        CursorService service = new CursorService(db);
        CompletableFuture<Long> ack;
        try (Connection reinstall = db.getConnection(); Statement st = reinstall.createStatement()) {
            // The reinstall's transaction (Directory.reinstallDevice), held open before it commits.
            reinstall.setAutoCommit(false);
            st.execute("SELECT 1 FROM devices WHERE device_id = 'd-bo' FOR UPDATE");
            st.execute("UPDATE devices SET install_epoch = 2 WHERE device_id = 'd-bo'");
            st.execute("DELETE FROM device_cursors WHERE device_id = 'd-bo'");
            ack = CompletableFuture.supplyAsync(() -> service.ack(bo, "c1", 5));   // install 1 acks meanwhile
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!ack.isDone() && one("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                    + " AND wait_event_type = 'Lock'") == 0) {
                assertTrue(System.nanoTime() < deadline, "the ack neither finished nor waited for the reinstall");
                java.util.concurrent.locks.LockSupport.parkNanos(5_000_000);
            }
            reinstall.commit();
        }
        try {
            long delivered = ack.get(10, TimeUnit.SECONDS);
            throw new AssertionError("install 1 acked after its reinstall: delivered=" + delivered + ", rows of epoch 1: "
                    + one("SELECT count(*) FROM device_cursors WHERE device_id = 'd-bo' AND install_epoch = 1"));
        } catch (ExecutionException e) {
            assertEquals(ErrorCode.STALE_INSTALL, ((AckRejectedException) e.getCause()).errorCode());
        }
        assertEquals(0, one("SELECT count(*) FROM device_cursors WHERE device_id = 'd-bo'"), "no cursor of the old install");
    }
}
