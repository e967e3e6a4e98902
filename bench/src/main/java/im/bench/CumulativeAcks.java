package im.bench;

import im.protocol.Ack;
import im.protocol.ConvState;
import im.protocol.Event;
import im.protocol.Subbed;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * A raw recipient's acknowledgements: per conversation the contiguous cursor, and a cumulative ack
 * at once after {@code every} unacked pushes, otherwise at most {@code windowMs} after the first
 * unacked one (0: every push at once). Raw recipients do not sync, so a push past the cursor + 1 is
 * taken and reported as a gap.
 */
final class CumulativeAcks {
    /** What a push was to its connection. */
    enum Outcome { NEW, GAP, REPEATED }

    /** One conversation of one connection; guarded by itself. */
    static final class Conv {
        long cursor;
        long acked;
        int unacked;
        boolean flushScheduled;
    }

    private final int every;
    private final int windowMs;
    private final ScheduledExecutorService timer;

    CumulativeAcks(int every, int windowMs, ScheduledExecutorService timer) {
        this.every = every;
        this.windowMs = windowMs;
        this.timer = timer;
    }

    /**
     * The conversations {@code sub} reported, each taken as held up to its head and acked so, as a
     * client does once it has synced (otherwise the sweeper rightly hints it).
     */
    static Map<String, Conv> holdSubbed(RawWs conn, Subbed s) {
        Map<String, Conv> convs = new ConcurrentHashMap<>();
        for (ConvState cs : s.convs()) {
            Conv a = new Conv();
            a.cursor = cs.head();
            a.acked = cs.delivered();
            convs.put(cs.conv(), a);
        }
        for (Map.Entry<String, Conv> e : convs.entrySet()) {
            synchronized (e.getValue()) {
                flush(conn, e.getKey(), e.getValue());
            }
        }
        return convs;
    }

    /** Moves the cursor of {@code ev}'s conversation and acks per the policy ({@code now}: at once). */
    Outcome onPush(RawWs conn, Map<String, Conv> convs, Event ev, boolean now) {
        Conv a = convs.computeIfAbsent(ev.conv(), k -> new Conv());
        synchronized (a) {
            if (ev.seq() <= a.cursor) return Outcome.REPEATED;
            Outcome o = ev.seq() > a.cursor + 1 ? Outcome.GAP : Outcome.NEW;
            a.cursor = ev.seq();
            a.unacked++;
            if (now || a.unacked >= every || windowMs == 0) {
                flush(conn, ev.conv(), a);
            } else if (!a.flushScheduled) {
                a.flushScheduled = true;
                timer.schedule(() -> {
                    synchronized (a) {
                        a.flushScheduled = false;
                        flush(conn, ev.conv(), a);
                    }
                }, windowMs, TimeUnit.MILLISECONDS);
            }
            return o;
        }
    }

    /** Caller holds {@code a}'s lock. */
    private static void flush(RawWs conn, String conv, Conv a) {
        if (a.cursor > a.acked) {
            conn.send(new Ack(conn.nextRid("k"), conv, a.cursor));
            a.acked = a.cursor;
        }
        a.unacked = 0;
    }
}
