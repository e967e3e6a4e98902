package im.store.cursor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.infra.fault.Faults;
import im.infra.identity.DevicePrincipal;
import im.protocol.ErrorCode;
import im.protocol.ReadState;
import im.store.directory.Directory;
import im.store.send.SendService;
import im.testkit.Await;
import im.testkit.ImStackExtension;
import im.testkit.TestStack;
import im.topics.CursorRecord;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Reads written in batches ({@link ReadCursors#markReads}, {@link ReadWriter}): one transaction for
 * many reads, one row write per (user, conversation) however many of its devices read, refusals
 * alone, the throttle, and a read of a send not visible yet. Before the batches, every read was a
 * transaction of its own on the gateway's worker pool, holding a pool connection through its Kafka
 * publish, and with every recipient reading, the reads starved the sends (docs/benchmarks.md,
 * "Read state": p99 1.3-1.7 s at 600 sends/s).
 */
@ExtendWith(ImStackExtension.class)
class ReadWriterIT {
    private DataSource db;
    private Directory dir;
    private SendService sends;
    private final List<CursorRecord> published = Collections.synchronizedList(new ArrayList<>());
    private ReadCursors reads;
    private DevicePrincipal ana;
    private DevicePrincipal boPhone;
    private DevicePrincipal boTablet;
    private DevicePrincipal cy;
    private DevicePrincipal dan;

    @BeforeEach
    void setUp(TestStack stack) {
        db = stack.dataSource();
        dir = new Directory(db, Clock.systemUTC());
        sends = new SendService(db, Faults.none(), Clock.systemUTC());
        reads = new ReadCursors(db, published::addAll);
        for (String u : List.of("u-ana", "u-bo", "u-cy", "u-dan")) dir.createUser(u, u);
        ana = dir.authenticate(dir.registerDevice("u-ana", "d-ana").token());
        boPhone = dir.authenticate(dir.registerDevice("u-bo", "d-bo-phone").token());
        boTablet = dir.authenticate(dir.registerDevice("u-bo", "d-bo-tablet").token());
        cy = dir.authenticate(dir.registerDevice("u-cy", "d-cy").token());
        dan = dir.authenticate(dir.registerDevice("u-dan", "d-dan").token());
        dir.createConversation("g", "group", List.of("u-ana", "u-bo", "u-cy"));   // seq 1
        for (int i = 0; i < 6; i++) sends.send(ana, "g", "a" + i, "hello " + i);   // seqs 2..7
    }

    @AfterEach
    void close() {
        sends.close();
    }

    @Test
    void aBatchWritesOneRowPerUserAndConversationAndRefusesOnlyTheBadReads() throws Exception {
        List<GroupCommit.Outcome<ReadCursors.Marked>> out = reads.markReads(List.of(
                new ReadCursors.ReadRequest(boPhone, "g", 3),
                new ReadCursors.ReadRequest(boTablet, "g", 5),     // the same user: merged with the phone's
                new ReadCursors.ReadRequest(cy, "g", 9),           // above the head
                new ReadCursors.ReadRequest(dan, "g", 2),          // not a member
                new ReadCursors.ReadRequest(boPhone, "nope", 1),   // no such conversation
                new ReadCursors.ReadRequest(cy, "g", 4),
                new ReadCursors.ReadRequest(new DevicePrincipal("u-ana", "d-ana", ana.installEpoch() + 1, ana.credential()), "g", 2)));
        assertEquals(new ReadState(5, 2, 7), out.get(0).value().state(), "merged: the user's largest read of the batch");
        assertEquals(new ReadState(5, 2, 7), out.get(1).value().state());
        assertTrue(out.get(0).value().moved(), "the row's first read says it moved (its gateway publishes the notice)");
        assertFalse(out.get(1).value().moved(), "once per row: one notice");
        assertEquals(ErrorCode.CURSOR_AHEAD, ((AckRejectedException) out.get(2).rejected()).errorCode());
        assertEquals(ErrorCode.NOT_MEMBER, ((AckRejectedException) out.get(3).rejected()).errorCode());
        assertEquals(ErrorCode.NOT_MEMBER, ((AckRejectedException) out.get(4).rejected()).errorCode());
        assertEquals(new ReadState(4, 3, 7), out.get(5).value().state(), "cy's other read of the batch is written");
        assertEquals(ErrorCode.STALE_INSTALL, ((AckRejectedException) out.get(6).rejected()).errorCode());
        assertEquals(List.of("u-bo:5", "u-cy:4"), published.stream().map(r -> (CursorRecord.Read) r)
                .map(r -> r.user() + ":" + r.read()).sorted().toList(), "one record per moved row");
        assertEquals(2, one("SELECT count(*) FROM read_cursors"));
    }

    @Test
    void concurrentReadsAreGroupCommittedAndEachAnsweredWithItsRow() throws Exception {
        try (ReadWriter w = new ReadWriter(reads, Duration.ofMillis(50), 256, 1, Duration.ZERO).start()) {
            List<CompletableFuture<ReadCursors.Marked>> fs = new ArrayList<>();
            for (int seq = 1; seq <= 7; seq++) {
                fs.add(w.read(seq % 2 == 0 ? boPhone : cy, "g", seq));
            }
            for (CompletableFuture<ReadCursors.Marked> f : fs) f.get(10, TimeUnit.SECONDS);
            assertEquals(7, w.reads());
            assertTrue(w.transactions() < 7, "fewer transactions than reads: " + w.transactions());
            assertEquals(new ReadState(6, 1, 7), fs.get(5).get().state(), "bo read up to 6");
            assertEquals(new ReadState(7, 0, 7), fs.get(6).get().state(), "cy read up to 7");
        }
    }

    /**
     * The per-row throttle: the first read of a (user, conversation) goes at once; reads of the
     * user's devices within the interval wait together and are written in one row write, each
     * answered with the merged state; another user's read is not held back.
     */
    @Test
    void aThrottledRowIsWrittenOncePerIntervalWithEveryReadOfItAnsweredWhenWritten() throws Exception {
        try (ReadWriter w = new ReadWriter(reads, Duration.ZERO, 256, 1, Duration.ofMillis(700)).start()) {
            assertEquals(2, w.read(boPhone, "g", 2).get(10, TimeUnit.SECONDS).state().read(), "the first read is not held");
            assertEquals(0, w.held());
            CompletableFuture<ReadCursors.Marked> phone = w.read(boPhone, "g", 4);
            CompletableFuture<ReadCursors.Marked> tablet = w.read(boTablet, "g", 3);
            assertEquals(2, w.held(), "reads of the row within the interval wait, from either device");
            assertEquals(5, w.read(cy, "g", 5).get(10, TimeUnit.SECONDS).state().read(), "another user goes at once");
            assertEquals(new ReadState(4, 3, 7), phone.get(10, TimeUnit.SECONDS).state());
            assertEquals(new ReadState(4, 3, 7), tablet.get(10, TimeUnit.SECONDS).state(), "written together: the merged state");
            assertEquals(3, w.transactions(), "bo twice (first, then the held reads once), cy once");
            assertEquals(3, published.size());
        }
    }

    @Test
    void heldReadsAreWrittenWhenTheWriterCloses() throws Exception {
        CompletableFuture<ReadCursors.Marked> held;
        try (ReadWriter w = new ReadWriter(reads, Duration.ZERO, 256, 1, Duration.ofSeconds(60)).start()) {
            w.read(boPhone, "g", 2).get(10, TimeUnit.SECONDS);
            held = w.read(boTablet, "g", 6);
            assertEquals(1, w.held());
        }
        assertEquals(6, held.get(10, TimeUnit.SECONDS).state().read(), "not dropped: written on close");
        assertEquals(6, one("SELECT read_seq FROM read_cursors WHERE user_id = 'u-bo' AND conv_id = 'g'"));
    }

    /**
     * A device can read a message whose send is not visible yet (logical decoding streams a commit a
     * moment before it is visible): the read waits for the send, as an ack does, and then reads up
     * to it, the head the send left being the user's visible head (a read capped at the head its
     * check saw would stop one short).
     */
    @Test
    void aReadOfASendThatIsNotVisibleYetWaitsForItAndReadsUpToIt() throws Exception {
        try (Connection sender = db.getConnection(); Statement st = sender.createStatement()) {
            sender.setAutoCommit(false);
            st.execute("UPDATE conversations SET head_seq = 8 WHERE conv_id = 'g'");
            CompletableFuture<ReadCursors.Marked> read = CompletableFuture.supplyAsync(() -> reads.markRead(boPhone, "g", 8));
            Await.until(Duration.ofSeconds(10), () -> read.isDone() || waitingOnALock(), "the read waits on a lock or completes");
            assertFalse(read.isDone(), "the read waits for the send");
            sender.commit();
            assertEquals(8, read.get(10, TimeUnit.SECONDS).state().read());
        }
        try {
            reads.markRead(boPhone, "g", 9);
            throw new AssertionError("expected a refusal");
        } catch (AckRejectedException e) {
            assertEquals(ErrorCode.CURSOR_AHEAD, e.errorCode(), "no send in flight: refused at once");
        }
    }

    @Test
    void aRefusalReachesTheWritersCallerAsItsCause() throws Exception {
        try (ReadWriter w = new ReadWriter(reads, Duration.ZERO, 256, 1, Duration.ZERO).start()) {
            ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                    () -> w.read(dan, "g", 1).get(10, TimeUnit.SECONDS));
            assertEquals(ErrorCode.NOT_MEMBER, ((AckRejectedException) e.getCause()).errorCode());
        }
    }

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
}
