package im.store.send;

import im.infra.db.DatabaseUnavailableException;
import im.infra.db.Transactions;
import im.infra.fault.FaultPoint;
import im.infra.fault.Faults;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * One try of a group-commit batch as a few set-based statements ({@link SendSql#BATCH_LOCK},
 * {@link SendSql#BATCH_PRECHECK}, {@link SendSql#BATCH_INSERT}, COMMIT), whatever the batch's
 * size. Each send is decided by {@link SendRules}, as a per-send transaction's is, in the batch's
 * order, from what the pre-check read under the conversations' locks, with a send before it in the
 * batch as an earlier send of its cmid: a refused send takes no seq, and a cmid used twice in the
 * batch is a send and its dup.
 */
final class SendBatch {
    /** What one try came to; the caller answers nothing itself unless {@link Kind#DONE}. */
    enum Kind {
        /** Every send is answered (committed, refused, failed alone, or all failed together). */
        DONE,
        /** A deadlock or serialization failure: run the batch again. */
        CONFLICT,
        /** A row was skipped (a cmid committed concurrently, or a membership changed): run again. */
        RERUN,
        /** A statement failed for a reason that is not the database's state: split the batch. */
        SPLIT
    }

    record Outcome(Kind kind, RuntimeException error) {
        static final Outcome DONE = new Outcome(Kind.DONE, null);
    }

    private final DataSource db;
    private final Faults faults;
    private final Clock clock;

    SendBatch(DataSource db, Faults faults, Clock clock) {
        this.db = db;
        this.faults = faults;
        this.clock = clock;
    }

    /** A send the batch writes: its request, seq, event id and sender. */
    private record Row(SendService.Request req, long seq, String mid, String sender) {
        String conv() {
            return req.conv();
        }
    }

    /**
     * Runs {@code todo} in one transaction; {@code onCommit} gets the number of events committed. On {@link Kind#DONE} every send's outcome is
     * completed; on the other kinds nothing is, and nothing was committed.
     *
     * @return what happened, and for {@link Kind#CONFLICT} / {@link Kind#SPLIT} the error
     */
    Outcome run(List<SendService.Pending> todo, java.util.function.IntConsumer onCommit) {
        int n = todo.size();
        Object[] out = new Object[n];   // SendResult, RuntimeException (refusal or failure), or Integer (dup of that index)
        List<Row> rows = new ArrayList<>();
        Map<String, Instant> createdAt = new HashMap<>();
        try (Connection c = db.getConnection()) {
            c.setAutoCommit(false);
            try {
                ConversationLog.Heads heads = lock(c, todo);
                decide(c, todo, heads, out, rows);
                if (rows.isEmpty()) {
                    c.rollback();   // dups and refusals only: read only
                } else {
                    if (!insert(c, rows, heads, createdAt)) {
                        c.rollback();
                        return new Outcome(Kind.RERUN, null);
                    }
                    faults.maybeHalt(FaultPoint.SEND_BEFORE_COMMIT);
                    if (rows.size() > 1) faults.maybeHalt(FaultPoint.SEND_BATCH_BEFORE_COMMIT);
                    try {
                        c.commit();
                    } catch (SQLException e) {
                        Transactions.rollbackQuietly(c, e);
                        if (DatabaseUnavailableException.isTransientConflict(e)) return new Outcome(Kind.CONFLICT, DatabaseUnavailableException.classify("send", e));
                        failAll(todo, DatabaseUnavailableException.classify("send (commit: outcome unknown)", e));
                        return Outcome.DONE;
                    }
                    onCommit.accept(rows.size());   // counted before any caller wakes up
                }
            } catch (SQLException e) {
                Transactions.rollbackQuietly(c, e);
                if (DatabaseUnavailableException.isTransientConflict(e)) return new Outcome(Kind.CONFLICT, DatabaseUnavailableException.classify("send", e));
                if (DatabaseUnavailableException.isUnavailable(e)) {
                    failAll(todo, DatabaseUnavailableException.classify("send", e));
                    return Outcome.DONE;
                }
                return new Outcome(Kind.SPLIT, DatabaseUnavailableException.classify("send", e));
            } catch (RuntimeException e) {
                Transactions.rollbackQuietly(c, e);
                return new Outcome(Kind.SPLIT, e);
            }
        } catch (SQLException e) {   // no connection
            failAll(todo, DatabaseUnavailableException.classify("send", e));
            return Outcome.DONE;
        }
        answer(todo, out, rows, createdAt);
        return Outcome.DONE;
    }

    static void failAll(List<SendService.Pending> todo, RuntimeException e) {
        todo.forEach(p -> p.outcome().completeExceptionally(e));
    }

    /** Locks the batch's existing conversations and returns their heads. */
    private static ConversationLog.Heads lock(Connection c, List<SendService.Pending> todo) throws SQLException {
        TreeSet<String> convs = new TreeSet<>();
        for (SendService.Pending p : todo) convs.add(p.request().conv());
        ConversationLog.Heads heads = new ConversationLog.Heads();
        try (PreparedStatement ps = c.prepareStatement(SendSql.BATCH_LOCK)) {
            ps.setArray(1, c.createArrayOf("text", convs.toArray(String[]::new)));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) heads.locked(rs.getString(1), rs.getLong(2));
            }
        }
        return heads;
    }

    /** Decides each send in order ({@link SendRules}) and gives each accepted one the next seq of its conversation. */
    private void decide(Connection c, List<SendService.Pending> todo, ConversationLog.Heads heads, Object[] out, List<Row> rows)
            throws SQLException {
        int n = todo.size();
        String[] devs = new String[n];
        String[] convs = new String[n];
        String[] cmids = new String[n];
        for (int i = 0; i < n; i++) {
            SendService.Request r = todo.get(i).request();
            devs[i] = r.who().deviceId();
            convs[i] = r.conv();
            cmids[i] = r.cmid();
        }
        Map<String, Integer> accepted = new HashMap<>();   // sender + cmid -> index of its send in this batch
        try (PreparedStatement ps = c.prepareStatement(SendSql.BATCH_PRECHECK)) {
            ps.setArray(1, c.createArrayOf("text", devs));
            ps.setArray(2, c.createArrayOf("text", convs));
            ps.setArray(3, c.createArrayOf("text", cmids));
            try (ResultSet rs = ps.executeQuery()) {
                for (int i = 0; i < n; i++) {
                    if (!rs.next()) throw new IllegalStateException("pre-check returned fewer rows than sends");
                    SendService.Request req = todo.get(i).request();
                    try {
                        out[i] = decideOne(rs, req, heads, accepted, todo, rows, i);
                    } catch (RuntimeException e) {   // a refusal, or a failure of this send alone
                        out[i] = e;
                    }
                }
            }
        }
    }

    private Object decideOne(ResultSet rs, SendService.Request req, ConversationLog.Heads heads, Map<String, Integer> accepted,
                             List<SendService.Pending> todo, List<Row> rows, int i) throws SQLException {
        SendRules.Facts facts = SendRules.read(rs, heads.has(req.conv()));
        Integer earlier = facts.earlier() == null ? accepted.get(facts.user() + '\u0000' + req.cmid()) : null;
        if (earlier != null) facts = facts.withEarlier(todo.get(earlier).request());   // a send before it in this batch
        if (SendRules.decide(req, facts) == SendRules.Verdict.DUP) {
            // a dup of a committed send is answered now; of a send of this batch, with its seq once committed
            return earlier != null ? earlier : SendRules.storedDup(rs, req);
        }
        faults.maybeHalt(FaultPoint.SEND_BEFORE_INSERT);
        faults.maybeFail(FaultPoint.SEND_BEFORE_INSERT);
        long seq = heads.next(req.conv());
        rows.add(new Row(req, seq, ConversationLog.newEventId(clock), facts.user()));
        accepted.put(facts.user() + '\u0000' + req.cmid(), i);
        return rows.get(rows.size() - 1);
    }

    /** Moves the heads and inserts the rows; false when a row was skipped (the batch must run again). */
    private static boolean insert(Connection c, List<Row> rows, ConversationLog.Heads heads, Map<String, Instant> createdAt)
            throws SQLException {
        int n = rows.size();
        String[] convs = new String[n];
        Long[] seqs = new Long[n];
        UUID[] mids = new UUID[n];
        String[] senders = new String[n];
        String[] devs = new String[n];
        String[] cmids = new String[n];
        String[] bodies = new String[n];
        for (int k = 0; k < n; k++) {
            Row r = rows.get(k);
            convs[k] = r.conv();
            seqs[k] = r.seq();
            mids[k] = UUID.fromString(r.mid());
            senders[k] = r.sender();
            SendService.Request req = r.req();
            devs[k] = req.who().deviceId();
            cmids[k] = req.cmid();
            bodies[k] = req.body();
        }
        try (PreparedStatement ps = c.prepareStatement(SendSql.BATCH_INSERT)) {
            heads.bindMove(c, ps, 1);
            ps.setArray(4, c.createArrayOf("text", convs));
            ps.setArray(5, c.createArrayOf("int8", seqs));
            ps.setArray(6, c.createArrayOf("uuid", mids));
            ps.setArray(7, c.createArrayOf("text", senders));
            ps.setArray(8, c.createArrayOf("text", devs));
            ps.setArray(9, c.createArrayOf("text", cmids));
            ps.setArray(10, c.createArrayOf("text", bodies));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    Timestamp at = rs.getTimestamp(3);
                    createdAt.put(rs.getString(1) + '\u0000' + rs.getLong(2), at.toInstant());
                }
            }
        }
        return createdAt.size() == n;
    }

    /** Completes every send after the COMMIT (or the read-only rollback). */
    private static void answer(List<SendService.Pending> todo, Object[] out, List<Row> rows, Map<String, Instant> createdAt) {
        for (int i = 0; i < out.length; i++) {
            SendService.Pending p = todo.get(i);
            int epoch = p.request().who().installEpoch();
            Object o = out[i];
            if (o instanceof Integer earlier) {
                Row r = (Row) out[earlier];
                p.outcome().complete(new SendResult(r.conv(), r.seq(), r.mid(), true, epoch, createdAt.get(r.conv() + '\u0000' + r.seq())));
            } else if (o instanceof Row r) {
                p.outcome().complete(new SendResult(r.conv(), r.seq(), r.mid(), false, epoch, createdAt.get(r.conv() + '\u0000' + r.seq())));
            } else if (o instanceof SendResult dup) {
                p.outcome().complete(dup);
            } else {
                p.outcome().completeExceptionally((RuntimeException) o);
            }
        }
    }
}
