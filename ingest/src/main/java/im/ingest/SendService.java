package im.ingest;

import im.protocol.ErrorCode;
import im.infra.db.DatabaseUnavailableException;
import im.infra.db.Transactions;
import im.infra.fault.FaultPoint;
import im.infra.fault.Faults;
import im.infra.identity.DevicePrincipal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The write path of a message. A send deduplicates by (sender, cmid), allocates the
 * conversation's next seq without gaps, inserts the event and commits; the result is returned
 * only after COMMIT succeeded (D1); a resend of a committed cmid returns the original seq with
 * {@code dup=true} and writes nothing (D2). A transaction that does not commit consumes no seq,
 * because the seq allocation rolls back with it.
 *
 * <p><b>Group commit.</b> With {@code lanes > 0} concurrent sends are committed together: each
 * conversation belongs to one lane (by hash), a lane's thread takes every send waiting for it (up
 * to {@code batchMax}) and runs them in order in one transaction with one COMMIT (one WAL flush
 * instead of one per send). Every send of a batch is answered only after that COMMIT. Within a
 * batch a send sees the ones before it, so two sends with the same cmid are a send and its dup.
 * A refused send writes nothing (its seq allocation is undone before the next send runs), so the
 * others keep gap-free seqs. A send whose statements fail is taken out: the batch is rolled back
 * and run again without it, and the failed one gets its own outcome. A failed COMMIT leaves every
 * send of the batch unknown: each caller gets {@link DatabaseUnavailableException} and resends
 * with the same cmid. The lanes' queues are not bounded here: each caller is a thread blocked on
 * its own send, so the gateway's worker pool bounds them. {@code lanes = 0} runs each send in a
 * transaction of its own on the caller's thread.
 */
public final class SendService implements AutoCloseable {
    private static final String UNIQUE_VIOLATION = "23505";
    private static final Logger log = LoggerFactory.getLogger(SendService.class);
    /** Default lanes and batch size (IM_SEND_LANES, IM_SEND_BATCH_MAX). */
    public static final int DEFAULT_LANES = 4;
    public static final int DEFAULT_BATCH_MAX = 64;
    /** A batch aborted by a deadlock or serialization failure is run again this often. */
    private static final int CONFLICT_ATTEMPTS = 3;

    private final DataSource db;
    private final Faults faults;
    private final Clock clock;
    private final int batchMax;
    private final Lane[] lanes;
    private final AtomicLong transactions = new AtomicLong();
    private final AtomicLong committedSends = new AtomicLong();
    private volatile boolean closed;

    /** Group commit with the default lanes and batch size. */
    public SendService(DataSource db, Faults faults, Clock clock) {
        this(db, faults, clock, DEFAULT_LANES, DEFAULT_BATCH_MAX);
    }

    /**
     * @param lanes    threads that commit batches (0: no batching, each send on the caller's thread)
     * @param batchMax most sends in one transaction
     */
    public SendService(DataSource db, Faults faults, Clock clock, int lanes, int batchMax) {
        if (lanes < 0) throw new IllegalArgumentException("lanes must be >= 0, was " + lanes);
        if (batchMax < 1) throw new IllegalArgumentException("batchMax must be >= 1, was " + batchMax);
        this.db = db;
        this.faults = faults;
        this.clock = clock;
        this.batchMax = batchMax;
        this.lanes = new Lane[lanes];
        for (int i = 0; i < lanes; i++) this.lanes[i] = new Lane(i);
    }

    /**
     * Sends one message. Inputs are assumed syntactically valid (the protocol codec checks ids
     * and sizes). Throws {@link SendRejectedException} for refusals (nothing written) and
     * {@link DatabaseUnavailableException} when PostgreSQL cannot be reached (outcome unknown:
     * resend with the same cmid).
     */
    public SendResult send(DevicePrincipal who, String conv, String cmid, String body) {
        if (lanes.length == 0) return sendAlone(who, conv, cmid, body);
        if (closed) throw new DatabaseUnavailableException("send: the gateway is shutting down", null);
        Pending p = new Pending(new Request(who, conv, cmid, body), new CompletableFuture<>());
        lanes[Math.floorMod(conv.hashCode(), lanes.length)].queue.add(p);
        try {
            return p.outcome.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DatabaseUnavailableException("send: interrupted while waiting for its commit (outcome unknown)", e);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) throw r;
            throw new IllegalStateException(e.getCause());
        }
    }

    /** One send waiting in a lane (or given to {@link #sendAsOneBatch}). */
    record Request(DevicePrincipal who, String conv, String cmid, String body) {}

    /**
     * Runs {@code requests} as one batch on the caller's thread, as a lane would if they were
     * waiting together (for tests of what a batch does; concurrency decides that in production).
     */
    List<CompletableFuture<SendResult>> sendAsOneBatch(List<Request> requests) {
        List<Pending> batch = requests.stream()
                .map(r -> new Pending(r, new CompletableFuture<SendResult>()))
                .toList();
        commitBatch(batch);
        return batch.stream().map(Pending::outcome).toList();
    }

    /** Transactions committed by the lanes, and the sends they committed (for tests and metrics). */
    public long transactions() {
        return transactions.get();
    }

    public long committedSends() {
        return committedSends.get();
    }

    /** Stops the lanes; sends still waiting get {@link DatabaseUnavailableException}. */
    @Override
    public void close() {
        closed = true;
        for (Lane l : lanes) l.thread.interrupt();
        for (Lane l : lanes) {
            try {
                l.thread.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            List<Pending> left = new ArrayList<>();
            l.queue.drainTo(left);
            left.forEach(p -> p.outcome.completeExceptionally(
                    new DatabaseUnavailableException("send: the gateway is shutting down", null)));
        }
    }

    /** One send in a transaction of its own, on the caller's thread. */
    private SendResult sendAlone(DevicePrincipal who, String conv, String cmid, String body) {
        try {
            return attempt(who, conv, cmid, body);
        } catch (CmidRace race) {
            // A concurrent send with the same cmid committed first; the retry finds it as a dup.
            return attempt(who, conv, cmid, body);
        }
    }

    private record Pending(Request request, CompletableFuture<SendResult> outcome) {}

    private final class Lane {
        final LinkedBlockingQueue<Pending> queue = new LinkedBlockingQueue<>();
        final Thread thread;

        Lane(int i) {
            thread = new Thread(this::run, "send-lane-" + i);
            thread.setDaemon(true);
            thread.start();
        }

        private void run() {
            List<Pending> batch = new ArrayList<>(batchMax);
            while (!closed) {
                try {
                    batch.add(queue.take());
                } catch (InterruptedException e) {
                    return;
                }
                queue.drainTo(batch, batchMax - 1);
                try {
                    commitBatch(batch);
                } catch (RuntimeException e) {
                    log.error("send batch failed unexpectedly", e);
                    failAll(batch, e);
                }
                batch.clear();
            }
        }
    }

    /**
     * Runs the batch in one transaction until it commits: a send whose statements fail is taken
     * out (answered on its own) and the rest run again; a deadlock or serialization failure runs
     * the whole batch again, at most {@value #CONFLICT_ATTEMPTS} times.
     */
    private void commitBatch(List<Pending> batch) {
        List<Pending> todo = new ArrayList<>(batch);
        int conflicts = 0;
        while (!todo.isEmpty()) {
            Round r = oneTransaction(todo);
            if (r.conflict != null) {
                if (++conflicts >= CONFLICT_ATTEMPTS) {
                    failAll(todo, DatabaseUnavailableException.classify("send", r.conflict));
                    return;
                }
                continue;
            }
            if (r.culprit < 0) return;   // committed (or failed as a whole): every send answered
            Pending bad = todo.remove(r.culprit);
            if (r.culpritError instanceof CmidRace) {
                // A send with this cmid in another lane committed first: alone, it finds it as a dup.
                Request req = bad.request();
                complete(bad, () -> sendAlone(req.who(), req.conv(), req.cmid(), req.body()));
            } else {
                bad.outcome.completeExceptionally(r.culpritError);
            }
        }
    }

    /** The result of one try: all answered (culprit -1), one send to take out, or a conflict. */
    private record Round(int culprit, RuntimeException culpritError, SQLException conflict) {}

    private Round oneTransaction(List<Pending> todo) {
        int n = todo.size();
        Object[] out = new Object[n];   // SendResult or SendRejectedException
        try (Connection c = db.getConnection()) {
            c.setAutoCommit(false);
            int writes = 0;
            for (int i = 0; i < n; i++) {
                Request req = todo.get(i).request();
                try {
                    SendResult r = inTransaction(c, req.who(), req.conv(), req.cmid(), req.body());
                    out[i] = r;
                    if (!r.dup()) writes++;
                } catch (SendRejectedException e) {
                    out[i] = e;
                } catch (SQLException | RuntimeException e) {
                    Transactions.rollbackQuietly(c, e);
                    if (e instanceof SQLException sql) {
                        if (DatabaseUnavailableException.isTransientConflict(sql)) return new Round(-1, null, sql);
                        if (DatabaseUnavailableException.isUnavailable(sql)) {
                            failAll(todo, DatabaseUnavailableException.classify("send", sql));
                            return new Round(-1, null, null);
                        }
                        return new Round(i, isCmidRace(sql) ? new CmidRace() : DatabaseUnavailableException.classify("send", sql), null);
                    }
                    return new Round(i, (RuntimeException) e, null);
                }
            }
            try {
                if (writes > 0) {
                    faults.maybeHalt(FaultPoint.SEND_BEFORE_COMMIT);
                    if (writes > 1) faults.maybeHalt(FaultPoint.SEND_BATCH_BEFORE_COMMIT);
                    c.commit();
                    transactions.incrementAndGet();
                } else {
                    c.rollback();   // dups and refusals only: read only
                }
            } catch (SQLException e) {
                Transactions.rollbackQuietly(c, e);
                if (DatabaseUnavailableException.isTransientConflict(e)) return new Round(-1, null, e);
                failAll(todo, DatabaseUnavailableException.classify("send (commit: outcome unknown)", e));
                return new Round(-1, null, null);
            }
        } catch (SQLException e) {   // no connection
            failAll(todo, DatabaseUnavailableException.classify("send", e));
            return new Round(-1, null, null);
        }
        for (int i = 0; i < n; i++) {
            if (out[i] instanceof SendResult r) {
                if (!r.dup()) committedSends.incrementAndGet();
                todo.get(i).outcome.complete(r);
            } else {
                todo.get(i).outcome.completeExceptionally((SendRejectedException) out[i]);
            }
        }
        return new Round(-1, null, null);
    }

    private static void failAll(List<Pending> todo, RuntimeException e) {
        todo.forEach(p -> p.outcome.completeExceptionally(e));
    }

    private static void complete(Pending p, java.util.function.Supplier<SendResult> run) {
        try {
            p.outcome.complete(run.get());
        } catch (RuntimeException e) {
            p.outcome.completeExceptionally(e);
        }
    }

    private static boolean isCmidRace(SQLException e) {
        return UNIQUE_VIOLATION.equals(e.getSQLState()) && String.valueOf(e.getMessage()).contains("events_sender_cmid");
    }

    private SendResult attempt(DevicePrincipal who, String conv, String cmid, String body) {
        try (Connection c = db.getConnection()) {
            c.setAutoCommit(false);
            try {
                SendResult r = inTransaction(c, who, conv, cmid, body);
                if (r.dup()) {
                    c.rollback();   // read only
                } else {
                    faults.maybeHalt(FaultPoint.SEND_BEFORE_COMMIT);
                    c.commit();
                }
                return r;
            } catch (SQLException | RuntimeException e) {
                Transactions.rollbackQuietly(c, e);
                throw e;
            }
        } catch (SQLException e) {
            if (isCmidRace(e)) {
                throw new CmidRace();
            }
            throw DatabaseUnavailableException.classify("send", e);
        }
    }

    private SendResult inTransaction(Connection c, DevicePrincipal who, String conv, String cmid, String body)
            throws SQLException {
        String user;
        boolean convExists;
        boolean member;
        try (PreparedStatement ps = c.prepareStatement(SendSql.PRECHECK)) {
            ps.setString(1, conv);
            ps.setString(2, conv);
            ps.setString(3, cmid);
            ps.setString(4, who.deviceId());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next() || rs.getInt(1) != who.installEpoch()) {
                    throw new SendRejectedException(ErrorCode.STALE_INSTALL,
                            "device " + who.deviceId() + " was reinstalled; this install may not send");
                }
                user = rs.getString(2);
                convExists = rs.getBoolean(3);
                member = rs.getBoolean(4);
                String dupConv = rs.getString(5);
                if (dupConv != null) {
                    if (!dupConv.equals(conv) || !rs.getString(8).equals(body)) {
                        throw new SendRejectedException(ErrorCode.CMID_CONFLICT,
                                "cmid " + cmid + " was already used for a different message");
                    }
                    return new SendResult(conv, rs.getLong(6), rs.getString(7), true, who.installEpoch(),
                            rs.getTimestamp(9).toInstant());
                }
            }
        }
        if (!convExists) {
            throw new SendRejectedException(ErrorCode.UNKNOWN_CONV, "no conversation " + conv);
        }
        if (!member) {
            throw new SendRejectedException(ErrorCode.NOT_MEMBER, "not a member of " + conv);
        }
        long seq = ConversationLog.nextSeq(c, conv).orElseThrow(
                () -> new SendRejectedException(ErrorCode.UNKNOWN_CONV, "no conversation " + conv));
        faults.maybeHalt(FaultPoint.SEND_BEFORE_INSERT);
        faults.maybeFail(FaultPoint.SEND_BEFORE_INSERT);
        String mid = ConversationLog.newEventId(clock);
        try (PreparedStatement ps = c.prepareStatement(SendSql.INSERT_MSG)) {
            ps.setString(1, conv);
            ps.setLong(2, seq);
            ps.setString(3, mid);
            ps.setString(4, user);
            ps.setString(5, who.deviceId());
            ps.setString(6, cmid);
            ps.setString(7, body);
            ps.setString(8, conv);
            ps.setString(9, user);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    // The sender left while we waited for the conversation's lock. Give the seq
                    // back (we hold the lock, and it was the last one allocated) so a batch's later
                    // sends stay gap-free; a transaction of its own would roll it back anyway.
                    try (PreparedStatement undo = c.prepareStatement(SendSql.UNDO_SEQ)) {
                        undo.setString(1, conv);
                        undo.executeUpdate();
                    }
                    throw new SendRejectedException(ErrorCode.NOT_MEMBER, "not a member of " + conv);
                }
                return new SendResult(conv, seq, mid, false, who.installEpoch(), rs.getTimestamp(1).toInstant());
            }
        }
    }

    /** Internal signal: the (sender, cmid) unique key was taken by a concurrent transaction. */
    private static final class CmidRace extends RuntimeException {
        CmidRace() {
            super(null, null, false, false);
        }
    }
}
