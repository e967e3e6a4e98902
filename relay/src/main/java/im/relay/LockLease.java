package im.relay;

import java.time.Duration;
import java.util.function.LongSupplier;

/**
 * The active relay's right to publish, the client half of the lock's server-side deadline.
 * PostgreSQL ends the lock session once it has been idle for the lock timeout T
 * ({@code idle_session_timeout}); its idle clock restarts no earlier than the moment a heartbeat
 * was sent. So a lease of T/2 counted from that moment runs out before the server can have
 * released the lock, however slowly the heartbeat's answer came back, and however long this
 * process was frozen (the monotonic clock runs on through a SIGSTOP). Decisions only: the caller
 * waits; time is a supplier so tests drive it.
 */
final class LockLease {
    /** What a batch about to be sent may do. */
    enum Verdict {
        /** The lease runs: send. */
        SEND,
        /** Lapsed, but the lock is not known lost: wait for the next heartbeat. */
        WAIT,
        /** The lock is lost, or no heartbeat renewed the lease in time: do not send. */
        FENCED
    }

    private final LongSupplier nanoTime;
    private final long leaseNanos;
    private final long patienceNanos;
    private volatile long until;
    private volatile boolean held;

    LockLease(Duration lockTimeout, LongSupplier nanoTime) {
        this.nanoTime = nanoTime;
        this.leaseNanos = lockTimeout.toNanos() / 2;
        this.patienceNanos = lockTimeout.toNanos();
    }

    long now() {
        return nanoTime.getAsLong();
    }

    /** The lock was taken by a request sent at {@code sentAt}. */
    void acquired(long sentAt) {
        until = sentAt + leaseNanos;
        held = true;
    }

    /** A heartbeat sent at {@code sentAt} succeeded. */
    void renewed(long sentAt) {
        if (sentAt + leaseNanos - until > 0) until = sentAt + leaseNanos;
    }

    /** The lock session failed or was closed: nothing more may be sent under this lock. */
    void lost() {
        held = false;
    }

    boolean held() {
        return held;
    }

    /** The moment after which a batch that has waited for a renewal gives up. */
    long patienceFrom(long start) {
        return start + patienceNanos;
    }

    /** The verdict now for a batch that waits no later than {@code giveUpAt}. */
    Verdict check(long giveUpAt) {
        if (!held) return Verdict.FENCED;
        long now = now();
        if (now - until < 0) return Verdict.SEND;
        return now - giveUpAt >= 0 ? Verdict.FENCED : Verdict.WAIT;
    }
}
