package im.relay;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the relay's lock session alive for exactly as long as the lock is held: from the moment
 * it is taken until the supervisor lets it go, a thread of its own runs {@code SELECT 1} on the
 * session every T/5 and renews the {@link LockLease} from each success, whatever the supervisor
 * is doing meanwhile (terminating a former holder's walsender, opening the producer, building,
 * starting or closing the engine, backing off before a restart). The server's
 * {@code idle_session_timeout} (T) therefore ends the session only when this process is silent
 * (frozen, cut off), never because the supervisor is busy.
 *
 * <p>When a heartbeat fails the keeper marks the lease lost at once (the engine's handler refuses
 * further batches) and completes {@link #lost()}, which the supervisor waits on. It also samples
 * the slot's WAL ({@link SlotWal}) after a heartbeat. Other statements on the session go
 * through {@link #call}, one at a time with the heartbeats (JDBC connections are not meant for
 * concurrent statements); a statement still running keeps the session busy, not idle, so the
 * server does not end it meanwhile.
 */
final class LockKeeper implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(LockKeeper.class);

    /** Work on the lock session. */
    interface SessionCall<R> {
        R call(Connection session) throws SQLException;
    }

    private final Connection session;
    private final LockLease lease;
    private final SlotWal slotWal;
    private final Duration lockTimeout;
    private final long periodNanos;
    private final ReentrantLock inUse = new ReentrantLock();
    private final CountDownLatch closed = new CountDownLatch(1);
    private final CompletableFuture<Void> lost = new CompletableFuture<>();
    private final Thread thread;

    private LockKeeper(Connection session, LockLease lease, SlotWal slotWal, Duration lockTimeout, String slot) {
        this.session = session;
        this.lease = lease;
        this.slotWal = slotWal;
        this.lockTimeout = lockTimeout;
        this.periodNanos = lockTimeout.toNanos() / 5;
        this.thread = new Thread(this::run, "relay-lock-" + slot);
        this.thread.setDaemon(true);
    }

    /**
     * Starts heartbeating {@code session}, on which the lock was just taken (the lease already
     * runs from that request); the first heartbeat follows T/5 later.
     */
    static LockKeeper start(Connection session, LockLease lease, SlotWal slotWal, Duration lockTimeout, String slot) {
        LockKeeper k = new LockKeeper(session, lease, slotWal, lockTimeout, slot);
        k.thread.start();
        return k;
    }

    /** Completes when a heartbeat failed: the session, and the lock with it, is gone. */
    CompletableFuture<Void> lost() {
        return lost;
    }

    /** Runs {@code work} on the lock session, between heartbeats. */
    <R> R call(SessionCall<R> work) throws SQLException {
        inUse.lock();
        try {
            return work.call(session);
        } finally {
            inUse.unlock();
        }
    }

    private void run() {
        long next = lease.now() + periodNanos;
        try {
            while (!closed.await(Math.max(0, next - lease.now()), TimeUnit.NANOSECONDS)) {
                // at a fixed rate: a slow round trip does not push the next heartbeat back
                next += periodNanos;
                if (!heartbeat()) return;
                if (next - lease.now() < 0) next = lease.now();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * One round trip on the lock session; on success the lease runs T/2 from before it was sent
     * (the server's idle clock restarts no earlier than that). False when the session is gone.
     */
    private boolean heartbeat() {
        inUse.lock();
        try {
            if (closed.getCount() == 0) return false;   // let go while waiting for the session
            long sent = lease.now();
            try (Statement st = session.createStatement()) {
                st.setQueryTimeout((int) Math.max(1, lockTimeout.toSeconds()));
                st.execute("SELECT 1");
            }
            lease.renewed(sent);
            slotWal.sample(session);
            return true;
        } catch (SQLException e) {
            lease.lost();   // at once: the handler refuses further batches, the gauge drops
            lost.complete(null);
            log.error("relay lost its lock session ({}); it stops publishing so another instance can take over",
                    e.getMessage());
            return false;
        } finally {
            inUse.unlock();
        }
    }

    /**
     * Stops heartbeating, before the session is closed. Waits for a heartbeat in flight, which
     * the session's socket timeout (2 T) bounds.
     */
    @Override
    public void close() {
        closed.countDown();
        try {
            thread.join(2 * lockTimeout.toMillis() + 1_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
