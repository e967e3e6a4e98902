package im.store.send;

import im.infra.config.ConfigKeys;
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
 * to {@code batchMax}) and commits them in one transaction with one COMMIT (one WAL flush instead
 * of one per send), as a few set-based statements whatever the batch's size ({@link SendBatch}).
 * Every send of a batch is answered only after that COMMIT. Within a batch a send sees the ones
 * before it, so two sends with the same cmid are a send and its dup. A refused send takes no seq,
 * so the others keep gap-free seqs. A statement that fails for a reason other than the database's
 * state splits the batch until the send that fails is alone and gets its own failure. A failed
 * COMMIT leaves every send of the batch unknown: each caller gets
 * {@link DatabaseUnavailableException} and resends with the same cmid. The lanes' queues are not
 * bounded here: each caller is a thread blocked on its own send, so the gateway's worker pool
 * bounds them. {@code lanes = 0} runs each send in a transaction of its own on the caller's
 * thread, with the per-send statements of {@link SendSql} (the ones the benchmark gives pgbench).
 */
public final class SendService implements AutoCloseable {
    private static final String UNIQUE_VIOLATION = "23505";
    private static final Logger log = LoggerFactory.getLogger(SendService.class);
    /** Default lanes and batch size: those of IM_SEND_LANES and IM_SEND_BATCH_MAX, declared once in ConfigKeys. */
    public static final int DEFAULT_LANES = Integer.parseInt(ConfigKeys.SEND_LANES.defaultValue());
    public static final int DEFAULT_BATCH_MAX = Integer.parseInt(ConfigKeys.SEND_BATCH_MAX.defaultValue());
    /** A batch aborted by a deadlock or serialization failure is run again this often. */
    private static final int CONFLICT_ATTEMPTS = 3;

    private final DataSource db;
    private final Faults faults;
    private final Clock clock;
    private final int batchMax;
    private final Lane[] lanes;
    private final SendBatch setBased;
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
        this.setBased = new SendBatch(db, faults, clock);
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

    /** A send waiting for its batch's outcome. */
    record Pending(Request request, CompletableFuture<SendResult> outcome) {}

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
     * Runs the batch until it is answered: a deadlock or serialization failure runs it again (at
     * most {@value #CONFLICT_ATTEMPTS} times); a row skipped because a concurrent transaction
     * committed its cmid runs it again (the pre-check then finds that row); a statement that fails
     * for any other reason splits the batch in halves, run one after the other, until the send
     * that fails is alone and gets its own failure.
     */
    private void commitBatch(List<Pending> batch) {
        int conflicts = 0;
        int reruns = 0;
        while (true) {
            SendBatch.Outcome r = setBased.run(batch, events -> {
                transactions.incrementAndGet();
                committedSends.addAndGet(events);
            });
            switch (r.kind()) {
                case DONE -> {
                    return;
                }
                case CONFLICT -> {
                    if (++conflicts >= CONFLICT_ATTEMPTS) {
                        failAll(batch, r.error());
                        return;
                    }
                }
                case RERUN -> {
                    // Each rerun turns at least one send into a dup or a refusal, so this ends.
                    if (++reruns > batch.size()) {
                        failAll(batch, new DatabaseUnavailableException("send: the batch kept losing races (nothing written; resend)", null));
                        return;
                    }
                }
                case SPLIT -> {
                    if (batch.size() == 1) {
                        batch.get(0).outcome.completeExceptionally(r.error());
                    } else {
                        int half = batch.size() / 2;
                        commitBatch(new ArrayList<>(batch.subList(0, half)));
                        commitBatch(new ArrayList<>(batch.subList(half, batch.size())));
                    }
                    return;
                }
            }
        }
    }

    private static void failAll(List<Pending> todo, RuntimeException e) {
        SendBatch.failAll(todo, e);
    }

    /** Whether {@code e} says the (sender, cmid) unique key was taken by a concurrent transaction (also for {@link MessageChanges}). */
    static boolean isCmidRace(SQLException e) {
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
        Request req = new Request(who, conv, cmid, body);
        String user;
        try (PreparedStatement ps = c.prepareStatement(SendSql.PRECHECK)) {
            ps.setString(1, conv);
            ps.setString(2, conv);
            ps.setString(3, cmid);
            ps.setString(4, who.deviceId());
            try (ResultSet rs = ps.executeQuery()) {
                SendRules.Facts facts = rs.next() ? SendRules.read(rs, rs.getBoolean(SendRules.PRECHECK_CONV_EXISTS)) : SendRules.NO_DEVICE;
                if (SendRules.decide(req, facts) == SendRules.Verdict.DUP) return SendRules.storedDup(rs, req);
                user = facts.user();
            }
        }
        long seq = ConversationLog.nextSeq(c, conv).orElseThrow(() -> SendRules.unknownConv(conv));
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
                    // The sender left while we waited for the conversation's lock; the rollback
                    // that follows this refusal gives the seq back.
                    throw SendRules.notMember(conv);
                }
                return new SendResult(conv, seq, mid, false, who.installEpoch(), rs.getTimestamp(1).toInstant());
            }
        }
    }

    /** Internal signal: the (sender, cmid) unique key was taken by a concurrent transaction (also for {@link MessageChanges}). */
    static final class CmidRace extends RuntimeException {
        CmidRace() {
            super(null, null, false, false);
        }
    }
}
