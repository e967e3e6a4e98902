package im.store.send;

import im.protocol.ErrorCode;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.infra.fault.Faults;
import im.infra.identity.DevicePrincipal;
import im.store.directory.Directory;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** Group commit: what one batch does, and that concurrent sends form batches. */
class SendBatchIT extends SendTestBase {
    private static SendResult ok(java.util.concurrent.CompletableFuture<SendResult> f) throws Exception {
        return f.get(10, java.util.concurrent.TimeUnit.SECONDS);
    }

    private static ErrorCode refused(java.util.concurrent.CompletableFuture<SendResult> f) throws Exception {
        java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> f.get(10, java.util.concurrent.TimeUnit.SECONDS));
        return ((SendRejectedException) e.getCause()).errorCode();
    }

    /** Polls (10 s deadline) until some backend waits on a lock: the batch under test is blocked where the test wants it. */
    private void awaitABackendWaitingOnALock(String what) throws SQLException {
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
        while (count("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'") == 0) {
            assertTrue(System.nanoTime() < deadline, what);
            java.util.concurrent.locks.LockSupport.parkNanos(10_000_000);
        }
    }

    @Test
    void aBatchIsOneTransactionInWhichTheSameCmidTwiceIsASendAndItsDup() throws Exception {
        var out = sends.sendAsOneBatch(List.of(
                new SendService.Request(ana, "c-ab", "cm-1", "one"),
                new SendService.Request(bo, "c-ab", "cm-1", "bo's own cm-1"),
                new SendService.Request(ana, "c-ab", "cm-1", "one"),
                new SendService.Request(ana, "c-ab", "cm-2", "two")));
        SendResult first = ok(out.get(0));
        assertEquals(3, first.seq());
        assertFalse(first.dup());
        assertEquals(4, ok(out.get(1)).seq(), "a cmid is per sender");
        SendResult again = ok(out.get(2));
        assertTrue(again.dup(), "the same cmid later in the same batch is a dup of the first");
        assertEquals(3, again.seq());
        assertEquals(first.mid(), again.mid());
        assertEquals(5, ok(out.get(3)).seq());
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L), msgSeqs("c-ab"));
    }

    @Test
    void refusedSendsInABatchWriteNothingAndTheOthersStayGapFree() throws Exception {
        dir.createConversation("c-ac", "direct", List.of("u-ana", "u-cy"));
        var out = sends.sendAsOneBatch(List.of(
                new SendService.Request(ana, "c-ab", "cm-1", "one"),
                new SendService.Request(cy, "c-ab", "cm-x", "cy is not a member"),
                new SendService.Request(ana, "c-none", "cm-y", "no such conversation"),
                new SendService.Request(ana, "c-ab", "cm-1", "same cmid, another body"),
                new SendService.Request(ana, "c-ac", "cm-2", "another conversation"),
                new SendService.Request(ana, "c-ab", "cm-3", "three")));
        assertEquals(3, ok(out.get(0)).seq());
        assertEquals(ErrorCode.NOT_MEMBER, refused(out.get(1)));
        assertEquals(ErrorCode.UNKNOWN_CONV, refused(out.get(2)));
        assertEquals(ErrorCode.CMID_CONFLICT, refused(out.get(3)));
        assertEquals(3, ok(out.get(4)).seq());
        assertEquals(4, ok(out.get(5)).seq());
        assertEquals(List.of(1L, 2L, 3L, 4L), msgSeqs("c-ab"));
        assertEquals(4, count("SELECT head_seq FROM conversations WHERE conv_id = 'c-ab'"));
    }

    @Test
    void aSendThatFailsIsTakenOutAndTheRestOfTheBatchCommits() throws Exception {
        // the second occurrence of send.before_insert throws, as a bug would
        SendService failing = new SendService(db, Faults.parse("send.before_insert:fail:1:1"), Clock.systemUTC(), 1, 64);
        try {
            var out = failing.sendAsOneBatch(List.of(
                    new SendService.Request(ana, "c-ab", "cm-1", "one"),
                    new SendService.Request(ana, "c-ab", "cm-2", "fails"),
                    new SendService.Request(bo, "c-ab", "cm-3", "three")));
            assertEquals(3, ok(out.get(0)).seq());
            java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
                    () -> out.get(1).get(10, java.util.concurrent.TimeUnit.SECONDS));
            assertTrue(e.getCause() instanceof Faults.InjectedFailure, "the failing send gets its own failure: " + e.getCause());
            assertEquals(4, ok(out.get(2)).seq());
            assertEquals(List.of(1L, 2L, 3L, 4L), msgSeqs("c-ab"));
            assertEquals(0, count("SELECT count(*) FROM events WHERE cmid = 'cm-2'"));
            assertEquals(1, failing.transactions(), "the rest committed in one transaction");
        } finally {
            failing.close();
        }
    }

    @Test
    void aSenderWhoLeftWhileTheBatchWaitedForTheLockGetsNoSeqAndTheNextSendTakesIt() throws Exception {
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (Connection holder = db.getConnection()) {
            holder.setAutoCommit(false);
            try (var st = holder.createStatement()) {
                st.execute("SELECT head_seq FROM conversations WHERE conv_id = 'c-ab' FOR UPDATE");
                // ana leaves in the transaction that holds the lock, as Directory.leave does
                st.execute("UPDATE memberships SET to_seq = 2 WHERE conv_id = 'c-ab' AND user_id = 'u-ana'");
            }
            Future<List<java.util.concurrent.CompletableFuture<SendResult>>> batch = pool.submit(() -> sends.sendAsOneBatch(List.of(
                    new SendService.Request(ana, "c-ab", "cm-1", "checked before the leave, inserted after"),
                    new SendService.Request(bo, "c-ab", "cm-2", "next"))));
            awaitABackendWaitingOnALock("the batch waits for the conversation's lock");
            holder.commit();
            var out = batch.get(10, java.util.concurrent.TimeUnit.SECONDS);
            assertEquals(ErrorCode.NOT_MEMBER, refused(out.get(0)));
            assertEquals(3, ok(out.get(1)).seq(), "the seq the refused send had allocated is given back");
            assertEquals(List.of(1L, 2L, 3L), msgSeqs("c-ab"));
            assertEquals(3, count("SELECT head_seq FROM conversations WHERE conv_id = 'c-ab'"));
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * A statement of the batch fails: the (sender, cmid) key is taken by a transaction that
     * commits while the batch's insert waits on it (as a send of another lane would). The batch
     * rolls back and runs again, and its pre-check now finds the winner: the others commit,
     * gap-free, and the racing one gets the outcome a single send would (here CMID_CONFLICT: the
     * winner is in another conversation).
     */
    @Test
    void aSendOfABatchThatLosesACmidRaceIsTakenOutAndAnsweredAlone() throws Exception {
        dir.createConversation("c-ac", "direct", List.of("u-ana", "u-cy"));
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (Connection holder = db.getConnection()) {
            holder.setAutoCommit(false);
            try (var st = holder.createStatement()) {
                st.execute("UPDATE conversations SET head_seq = head_seq + 1 WHERE conv_id = 'c-ac'");
                st.execute("INSERT INTO events (conv_id, seq, kind, mid, sender, sender_device, cmid, body)"
                        + " VALUES ('c-ac', 3, 'msg', '018f0000-0000-7000-8000-000000000001', 'u-ana', 'd-ana', 'cm-race', 'elsewhere')");
            }
            Future<List<java.util.concurrent.CompletableFuture<SendResult>>> batch = pool.submit(() -> sends.sendAsOneBatch(List.of(
                    new SendService.Request(ana, "c-ab", "cm-1", "one"),
                    new SendService.Request(ana, "c-ab", "cm-race", "here"),
                    new SendService.Request(bo, "c-ab", "cm-2", "two"))));
            awaitABackendWaitingOnALock("the batch's insert waits on the uncommitted key");
            holder.commit();
            var out = batch.get(10, java.util.concurrent.TimeUnit.SECONDS);
            assertEquals(3, ok(out.get(0)).seq());
            assertEquals(ErrorCode.CMID_CONFLICT, refused(out.get(1)));
            assertEquals(4, ok(out.get(2)).seq());
            assertEquals(List.of(1L, 2L, 3L, 4L), msgSeqs("c-ab"));
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * One conversation, one batch, every kind of outcome: each send is decided in order, a refused
     * one takes no seq, a cmid whose first use was refused is free for a later send, and the dup
     * of a send of the same batch gets that send's seq, mid and commit time.
     */
    @Test
    void aBatchMixingRefusedAndAcceptedSendsOfOneConversationNumbersOnlyTheAccepted() throws Exception {
        dir.reinstallDevice("d-bo");   // bo's principal is now a stale install
        var out = sends.sendAsOneBatch(List.of(
                new SendService.Request(cy, "c-ab", "cm-1", "cy is not a member"),
                new SendService.Request(ana, "c-ab", "cm-1", "one"),
                new SendService.Request(bo, "c-ab", "cm-9", "from the old install"),
                new SendService.Request(ana, "c-ab", "cm-1", "one"),
                new SendService.Request(ana, "c-ab", "cm-1", "cm-1 again with another body"),
                new SendService.Request(ana, "c-ab", "cm-2", "two")));
        assertEquals(ErrorCode.NOT_MEMBER, refused(out.get(0)));
        SendResult one = ok(out.get(1));
        assertEquals(3, one.seq(), "cy's cmid cm-1 was refused, so ana's cm-1 is a new send and the first seq");
        assertFalse(one.dup());
        assertEquals(ErrorCode.STALE_INSTALL, refused(out.get(2)));
        SendResult dup = ok(out.get(3));
        assertTrue(dup.dup());
        assertEquals(List.of(one.seq(), one.mid(), one.at()), List.of(dup.seq(), dup.mid(), dup.at()));
        assertEquals(ErrorCode.CMID_CONFLICT, refused(out.get(4)));
        assertEquals(4, ok(out.get(5)).seq());
        assertEquals(List.of(1L, 2L, 3L, 4L), msgSeqs("c-ab"));
        assertEquals(4, count("SELECT head_seq FROM conversations WHERE conv_id = 'c-ab'"));
        assertEquals(one.at(), ((java.sql.Timestamp) single("SELECT created_at FROM events WHERE seq = 3 AND conv_id = 'c-ab'")).toInstant());
    }

    /**
     * A send whose row PostgreSQL (here the driver) refuses fails the batch's insert statement:
     * the batch is split until that send is alone, it gets its own failure, and the others commit
     * with gap-free seqs in the order they came.
     */
    @Test
    void aSendWhoseRowIsRefusedByTheDatabaseFailsAloneAndTheOthersCommitGapFree() throws Exception {
        var out = sends.sendAsOneBatch(List.of(
                new SendService.Request(ana, "c-ab", "cm-1", "one"),
                new SendService.Request(bo, "c-ab", "cm-2", "two"),
                new SendService.Request(ana, "c-ab", "cm-3", "a NUL \u0000 the codec would have refused"),
                new SendService.Request(bo, "c-ab", "cm-4", "four")));
        assertEquals(3, ok(out.get(0)).seq());
        assertEquals(4, ok(out.get(1)).seq());
        java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> out.get(2).get(10, java.util.concurrent.TimeUnit.SECONDS));
        assertTrue(e.getCause() instanceof IllegalStateException, "its own failure: " + e.getCause());
        assertEquals(5, ok(out.get(3)).seq());
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L), msgSeqs("c-ab"));
        assertEquals(0, count("SELECT count(*) FROM events WHERE cmid = 'cm-3'"));
    }

    private Object single(String sql) throws SQLException {
        try (Connection c = db.getConnection(); PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getObject(1);
        }
    }

    @Test
    void concurrentSendsToOneConversationShareTransactionsAndStayGapFree() throws Exception {
        int threads = 16;
        int perThread = 20;
        SendService batched = new SendService(db, Faults.none(), Clock.systemUTC(), 1, 64);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            CountDownLatch go = new CountDownLatch(1);
            List<Future<List<Long>>> fs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                DevicePrincipal who = t % 2 == 0 ? ana : bo;
                int id = t;
                fs.add(pool.submit(() -> {
                    go.await();
                    List<Long> seqs = new ArrayList<>();
                    for (int i = 0; i < perThread; i++) seqs.add(batched.send(who, "c-ab", "cm-" + id + "-" + i, "m").seq());
                    return seqs;
                }));
            }
            go.countDown();
            Set<Long> all = new TreeSet<>();
            for (Future<List<Long>> f : fs) all.addAll(f.get(60, java.util.concurrent.TimeUnit.SECONDS));
            int n = threads * perThread;
            assertEquals(n, all.size(), "every send got its own seq");
            assertEquals(3L, all.iterator().next());
            assertEquals(n + 2L, ((TreeSet<Long>) all).last(), "seqs 3.." + (n + 2) + ", no gap");
            assertEquals(n, batched.committedSends());
            assertTrue(batched.transactions() < n, "concurrent sends shared transactions: " + batched.transactions() + " for " + n);
            System.out.printf("group commit: %d sends in %d transactions%n", n, batched.transactions());
        } finally {
            pool.shutdownNow();
            batched.close();
        }
    }
}

