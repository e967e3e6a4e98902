package im.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.relay.LockLease.Verdict;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The fence's rules, on a hand-driven monotonic clock (T = 5 s: lease 2.5 s, patience 5 s). */
class LockLeaseTest {
    private final AtomicLong clock = new AtomicLong(1_000_000_000L);
    private final LockLease lease = new LockLease(Duration.ofSeconds(5), clock::get);

    private void advanceMillis(long ms) {
        clock.addAndGet(TimeUnit.MILLISECONDS.toNanos(ms));
    }

    private Verdict checkNow() {
        return lease.check(lease.patienceFrom(lease.now()));
    }

    @Test
    void nothingIsSentBeforeTheLockIsTaken() {
        assertFalse(lease.held());
        assertEquals(Verdict.FENCED, checkNow());
    }

    @Test
    void aFreshLeaseSendsUntilHalfTheLockTimeoutAfterTheLockRequestWasSent() {
        long sent = lease.now();
        advanceMillis(300);   // the lock request's round trip
        lease.acquired(sent);
        assertEquals(Verdict.SEND, checkNow());
        advanceMillis(2_199);
        assertEquals(Verdict.SEND, checkNow());
        advanceMillis(1);
        assertEquals(Verdict.WAIT, checkNow(), "2.5 s after the request was sent, not after its answer");
    }

    @Test
    void aSlowHeartbeatRenewsFromWhenItWasSentSoItCannotOutliveTheServersDeadline() {
        lease.acquired(lease.now());
        advanceMillis(1_000);
        long sent = lease.now();
        advanceMillis(2_000);   // the answer took 2 s
        lease.renewed(sent);
        assertEquals(Verdict.SEND, checkNow());
        advanceMillis(500);
        assertEquals(Verdict.WAIT, checkNow(), "lease ran from the send (t=1 s) to t=3.5 s");
    }

    @Test
    void anOlderHeartbeatNeverShortensTheLease() {
        long first = lease.now();
        advanceMillis(1_000);
        lease.acquired(lease.now());
        lease.renewed(first);
        advanceMillis(2_000);
        assertEquals(Verdict.SEND, checkNow());
    }

    @Test
    void aThawedRelayWaitsForItsHeartbeatAndIsFencedWhenItFails() {
        lease.acquired(lease.now());
        long giveUp = lease.patienceFrom(lease.now());
        advanceMillis(TimeUnit.HOURS.toMillis(1));   // SIGSTOP for an hour: the monotonic clock ran on
        long batchArrives = lease.now();
        assertEquals(Verdict.WAIT, lease.check(lease.patienceFrom(batchArrives)),
                "lapsed: the batch waits for the supervisor's heartbeat, it does not send");
        assertEquals(Verdict.FENCED, lease.check(giveUp), "a wait that began before the freeze has run out");
        lease.lost();   // the heartbeat failed: the server ended the session
        assertEquals(Verdict.FENCED, lease.check(lease.patienceFrom(batchArrives)));
        assertFalse(lease.held());
    }

    @Test
    void aShortPauseEndsWithTheNextHeartbeatAndALongOneWithNoHeartbeatFences() {
        lease.acquired(lease.now());
        advanceMillis(3_000);   // a 3 s pause: over the lease, under the server's 5 s
        long batch = lease.patienceFrom(lease.now());
        assertEquals(Verdict.WAIT, lease.check(batch));
        lease.renewed(lease.now());
        assertEquals(Verdict.SEND, lease.check(batch));
        assertTrue(lease.held());

        advanceMillis(2_500);
        long late = lease.patienceFrom(lease.now());
        assertEquals(Verdict.WAIT, lease.check(late));
        advanceMillis(5_000);   // no heartbeat succeeded for a whole lock timeout
        assertEquals(Verdict.FENCED, lease.check(late));
    }
}
