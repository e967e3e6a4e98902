package im.store.send;

import im.protocol.ErrorCode;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.infra.identity.DevicePrincipal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

class SendServiceIT extends SendTestBase {
    @Test
    void sendCommitsBeforeReturningAndResendIsADup() throws Exception {
        SendResult first = sends.send(ana, "c-ab", "cm-1", "hello");
        assertEquals(3, first.seq());
        assertFalse(first.dup());
        assertEquals(1, first.epoch());
        // Committed: visible from another connection the moment send returned (D1).
        assertEquals(1, count("SELECT count(*) FROM events WHERE conv_id = 'c-ab' AND seq = 3 AND cmid = 'cm-1'"));
        SendResult again = sends.send(ana, "c-ab", "cm-1", "hello");
        assertTrue(again.dup());
        assertEquals(first.seq(), again.seq());
        assertEquals(first.mid(), again.mid());
        assertEquals(1, messages(), "exactly one row (D2)");
        assertEquals(3, count("SELECT head_seq FROM conversations WHERE conv_id = 'c-ab'"), "a dup allocates no seq");
    }

    @Test
    void sameCmidWithOtherBodyOrConversationIsAConflictAndWritesNothing() throws Exception {
        dir.createConversation("c-ac", "direct", List.of("u-ana", "u-cy"));
        sends.send(ana, "c-ab", "cm-1", "hello");
        SendRejectedException body = assertThrows(SendRejectedException.class, () -> sends.send(ana, "c-ab", "cm-1", "other"));
        assertEquals(ErrorCode.CMID_CONFLICT, body.errorCode());
        SendRejectedException conv = assertThrows(SendRejectedException.class, () -> sends.send(ana, "c-ac", "cm-1", "hello"));
        assertEquals(ErrorCode.CMID_CONFLICT, conv.errorCode());
        assertEquals(1, messages());
    }

    @Test
    void cmidsAreScopedPerSender() throws Exception {
        SendResult a = sends.send(ana, "c-ab", "same", "from ana");
        SendResult b = sends.send(bo, "c-ab", "same", "from bo");
        assertFalse(b.dup());
        assertEquals(a.seq() + 1, b.seq());
    }

    @Test
    void nonMemberAndUnknownConversationWriteNothing() throws Exception {
        SendRejectedException nm = assertThrows(SendRejectedException.class, () -> sends.send(cy, "c-ab", "cm-x", "hi"));
        assertEquals(ErrorCode.NOT_MEMBER, nm.errorCode());
        SendRejectedException uc = assertThrows(SendRejectedException.class, () -> sends.send(ana, "c-none", "cm-y", "hi"));
        assertEquals(ErrorCode.UNKNOWN_CONV, uc.errorCode());
        assertEquals(0, messages());
        assertEquals(2, count("SELECT head_seq FROM conversations WHERE conv_id = 'c-ab'"));
    }

    @Test
    void memberWhoLeftCannotSendButEarlierSendStillDedups() throws Exception {
        SendResult before = sends.send(bo, "c-ab", "cm-b", "before leaving");
        dir.removeMember("c-ab", "u-bo");
        SendRejectedException e = assertThrows(SendRejectedException.class, () -> sends.send(bo, "c-ab", "cm-c", "after"));
        assertEquals(ErrorCode.NOT_MEMBER, e.errorCode());
        SendResult resend = sends.send(bo, "c-ab", "cm-b", "before leaving");
        assertTrue(resend.dup(), "a committed send stays committed after the sender left");
        assertEquals(before.seq(), resend.seq());
    }

    @Test
    void reinstalledDeviceOldInstallCannotSend() throws Exception {
        dir.reinstallDevice("d-ana");
        SendRejectedException e = assertThrows(SendRejectedException.class, () -> sends.send(ana, "c-ab", "cm-1", "hi"));
        assertEquals(ErrorCode.STALE_INSTALL, e.errorCode());
        assertEquals(0, messages());
    }

    @Test
    void rolledBackAllocationConsumesNoSeq() throws Exception {
        try (Connection c = db.getConnection()) {
            c.setAutoCommit(false);
            try (PreparedStatement ps = c.prepareStatement(ConversationLog.NEXT_SEQ)) {
                ps.setString(1, "c-ab");
                ps.executeQuery().close();
            }
            c.rollback();
        }
        assertEquals(3, sends.send(ana, "c-ab", "cm-1", "after a rollback").seq());
    }

    @Test
    void concurrentSendersGetGapFreeUniqueSeqs() throws Exception {
        int threads = 8;
        int perThread = 40;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<List<Long>>> futures = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            DevicePrincipal who = t % 2 == 0 ? ana : bo;
            int id = t;
            futures.add(pool.submit(() -> {
                go.await();
                List<Long> seqs = new ArrayList<>();
                for (int i = 0; i < perThread; i++) seqs.add(sends.send(who, "c-ab", "t" + id + "-" + i, "m" + i).seq());
                return seqs;
            }));
        }
        go.countDown();
        Set<Long> all = new TreeSet<>();
        int n = 0;
        for (Future<List<Long>> f : futures) {
            for (long s : f.get()) {
                all.add(s);
                n++;
            }
        }
        pool.shutdown();
        assertEquals(threads * perThread, n);
        assertEquals(threads * perThread, all.size(), "no seq handed out twice");
        assertEquals(3L, ((TreeSet<Long>) all).first());
        assertEquals(2L + threads * perThread, ((TreeSet<Long>) all).last(), "no gap");
        assertEquals(threads * perThread, count("SELECT count(DISTINCT seq) FROM events WHERE kind = 'msg'"));
    }

    @Test
    void concurrentResendsOfOneCmidEndWithOneRow() throws Exception {
        int threads = 12;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<SendResult>> futures = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            futures.add(pool.submit(() -> {
                go.await();
                return sends.send(ana, "c-ab", "cm-race", "racing");
            }));
        }
        go.countDown();
        int fresh = 0;
        Set<Long> seqs = new TreeSet<>();
        for (Future<SendResult> f : futures) {
            SendResult r = f.get();
            if (!r.dup()) fresh++;
            seqs.add(r.seq());
        }
        pool.shutdown();
        assertEquals(1, fresh, "exactly one attempt wrote the row");
        assertEquals(Set.of(3L), seqs);
        assertEquals(1, messages());
    }

}
