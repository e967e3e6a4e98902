package im.store.cursor;

import java.time.Duration;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;

/**
 * When a (device, conversation) pair may next be written: at most once per {@code interval},
 * the first time after a quiet spell at once. Not thread-safe (the caller holds a lock); pairs
 * not seen for an interval are forgotten, so the map holds only the pairs active right now.
 */
final class AckThrottle {
    private final long intervalNanos;
    private final Map<String, Long> lastAdmitted = new HashMap<>();
    private long nextSweep;

    AckThrottle(Duration interval) {
        if (interval.isNegative()) throw new IllegalArgumentException("interval must be >= 0, was " + interval);
        this.intervalNanos = interval.toNanos();
    }

    /**
     * Zero if the pair may be written now (and it is recorded as admitted at {@code now}), else
     * how many nanoseconds to wait; the caller then calls {@link #admitted} when it lets it go.
     */
    long admit(String pair, long now) {
        if (intervalNanos == 0) return 0;
        sweep(now);
        Long last = lastAdmitted.get(pair);
        long wait = last == null ? 0 : last + intervalNanos - now;
        if (wait > 0) return wait;
        lastAdmitted.put(pair, now);
        return 0;
    }

    /** Records that the pair was let through at {@code now}. */
    void admitted(String pair, long now) {
        if (intervalNanos > 0) lastAdmitted.put(pair, now);
    }

    int tracked() {
        return lastAdmitted.size();
    }

    private void sweep(long now) {
        if (now - nextSweep < 0) return;
        nextSweep = now + intervalNanos;
        for (Iterator<Long> it = lastAdmitted.values().iterator(); it.hasNext(); ) {
            if (now - it.next() >= intervalNanos) it.remove();
        }
    }
}
