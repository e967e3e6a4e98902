package im.client.internal;

import im.protocol.ConvState;
import im.protocol.ErrorCode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The decisions of the receive path, without I/O or time: when to sync, from where, and what to
 * ack. The driver ({@link ImClient}) feeds it what happened (stored batches, replies, hints,
 * connects) and performs the {@link Action}s it returns. Not thread-safe: one thread (the client's
 * receive thread) drives it.
 *
 * <p>Rules:
 * <ul>
 *   <li>At most one sync loop per conversation; a request during a loop reruns it once from the
 *       cursor when it ends. Every page is requested from the current cursor ({@code after = cursor});
 *       the loop pages while {@code more} is true.</li>
 *   <li>A stored push batch that leaves a pushed seq above the cursor (a gap) starts a sync.</li>
 *   <li>Acks are cumulative and coalesced: a conversation whose cursor is above what was acked gets
 *       "ack due"; the driver calls {@link #flushAcks()} after its window; at most one ack per
 *       conversation is in flight, and one ack carries the cursor at flush time.</li>
 *   <li>An {@code acked.delivered} above the cursor never raises the cursor: it starts a sync.</li>
 *   <li>An ack refused with {@code CURSOR_AHEAD} is not taken as held: the local cursor is the
 *       truth (every event up to it is stored). The server's head merely lagged (e.g. the push
 *       arrived before the commit was visible to the cursor service), so the conversation syncs
 *       and the ack is sent again as soon as the server shows a head at or above the refused seq
 *       (a {@code synced} page, a {@code hint}, a pushed seq, {@code subbed}).</li>
 *   <li>A failed ack (timeout, lost reply, a retriable error) is retried for its conversation after
 *       the {@link RetryRule} backoff of its consecutive failures; {@code INTERNAL} answers are
 *       counted, and at the cap (or on an error that refuses the ack) the value is given up
 *       ({@link AckGivenUp}) instead of being repeated.</li>
 *   <li>A reconnect resets everything per connection; {@code subbed} starts syncs where head &gt;
 *       cursor and acks where the server's value is below the cursor.</li>
 * </ul>
 */
final class ReceiveLogic {
    /** Something the driver must do. */
    sealed interface Action permits SendSync, SendAck, ScheduleAckFlush, RetryAck, AckGivenUp {
    }

    /** Send {@code sync{conv, after}}; deliver the reply to {@link #onSynced} or {@link #onSyncFailed}. */
    record SendSync(String conv, long after) implements Action {
    }

    /** Send {@code ack{conv, seq}}; deliver the reply to {@link #onAcked} or {@link #onAckFailed}. */
    record SendAck(String conv, long seq) implements Action {
    }

    /** Call {@link #flushAcks()} after the ack window (after a retry delay when {@code retry}). */
    record ScheduleAckFlush(boolean retry) implements Action {
    }

    /** Call {@link #retryAck} for {@code conv} after the backoff of its {@code failures}th consecutive failure. */
    record RetryAck(String conv, int failures) implements Action {
    }

    /**
     * The ack of {@code conv} up to {@code seq} is not retried: refused, or answered {@code INTERNAL}
     * {@code internalErrors} times (0 when refused by another code). Tell the application.
     */
    record AckGivenUp(String conv, long seq, int internalErrors) implements Action {
    }

    private static final class Conv {
        long cursor;
        /** The highest value the server is known to hold for this device (sent ack or acked/subbed delivered). */
        long serverDelivered;
        boolean ackInFlight;
        long ackInFlightSeq;
        boolean syncing;
        boolean syncAgain;
        /** The seq last refused with CURSOR_AHEAD (0: none); no ack until the server shows a head &ge; it. */
        long refusedAhead;
        /** Consecutive failed acks (for the backoff) and, among them, INTERNAL answers (for the cap). */
        int ackFailures;
        int ackInternalErrors;
        /** A failed ack waits for its backoff ({@link RetryAck}); the window flushes skip it meanwhile. */
        boolean ackRetryWaiting;
    }

    private final Map<String, Conv> convs = new HashMap<>();
    private final RetryRule retry;
    private boolean flushScheduled;

    ReceiveLogic(RetryRule retry) {
        this.retry = retry;
    }

    private Conv conv(String conv) {
        return convs.computeIfAbsent(conv, k -> new Conv());
    }

    /** Tells the logic the durable cursor of {@code conv} (from the store), e.g. at start. */
    void cursor(String conv, long cursor) {
        Conv c = conv(conv);
        c.cursor = Math.max(c.cursor, cursor);
    }

    long cursorOf(String conv) {
        Conv c = convs.get(conv);
        return c == null ? 0 : c.cursor;
    }

    boolean syncing(String conv) {
        Conv c = convs.get(conv);
        return c != null && c.syncing;
    }

    boolean ackInFlight(String conv) {
        Conv c = convs.get(conv);
        return c != null && c.ackInFlight;
    }

    /** A new connection: nothing is in flight any more and the server's view is unknown until {@code subbed}. */
    void connected() {
        for (Conv c : convs.values()) {
            c.ackInFlight = false;
            c.syncing = false;
            c.syncAgain = false;
            c.serverDelivered = 0;
            c.refusedAhead = 0;
            c.ackFailures = 0;
            c.ackInternalErrors = 0;
            c.ackRetryWaiting = false;
        }
        flushScheduled = false;
    }

    /** The {@code subbed} reply; cursors are those given by {@link #cursor} (unknown conversations are 0). */
    List<Action> onSubbed(List<ConvState> states) {
        return onSubbed(states, true);
    }

    /**
     * A {@code subbed} page: learns the server's heads and cursors; starts a sync of each conversation
     * behind its head only when {@code syncBehind} (the driver catches them up with {@code catchup}
     * otherwise, and calls {@link #syncNow} for those still behind after it).
     */
    List<Action> onSubbed(List<ConvState> states, boolean syncBehind) {
        List<Action> out = new ArrayList<>();
        boolean ackDue = false;
        for (ConvState s : states) {
            Conv c = conv(s.conv());
            c.serverDelivered = Math.max(c.serverDelivered, s.delivered());
            headSeen(c, s.head(), out);
            if (syncBehind && s.head() > c.cursor) {
                requestSync(s.conv(), out);
            }
            if (c.cursor > c.serverDelivered) {
                ackDue = true; // e.g. stored before a crash, ack never sent
            }
        }
        if (ackDue) {
            scheduleFlush(out, false);
        }
        return out;
    }

    /**
     * A batch was stored: {@code cursor} is the conversation's cursor after it, {@code maxSeq} the
     * highest seq pushed for it in the batch (0 for none).
     */
    List<Action> onStored(String conv, long cursor, long maxPushedSeq) {
        List<Action> out = new ArrayList<>();
        Conv c = conv(conv);
        c.cursor = Math.max(c.cursor, cursor);
        headSeen(c, maxPushedSeq, out); // the server pushed it, so its head is at least that
        if (maxPushedSeq > c.cursor) {
            requestSync(conv, out); // a gap: some seq in (cursor, maxPushedSeq) is missing
        }
        if (c.cursor > c.serverDelivered && !c.ackInFlight) {
            scheduleFlush(out, false); // with one in flight, its reply schedules the next
        }
        return out;
    }

    /** A {@code hint} (or an explicit request): sync from the cursor. */
    List<Action> onHint(String conv, long head) {
        List<Action> out = new ArrayList<>();
        headSeen(conv(conv), head, out);
        requestSync(conv, out);
        return out;
    }

    /** Forces a sync loop (e.g. {@link ImClient#syncNow}). */
    List<Action> syncNow(String conv) {
        List<Action> out = new ArrayList<>();
        requestSync(conv, out);
        return out;
    }

    /**
     * A {@code synced} page was stored; {@code cursorBefore}/{@code cursor} are the store's cursor
     * around it, {@code head} the page's head.
     */
    List<Action> onSynced(String conv, long cursorBefore, long cursor, boolean more, long head) {
        List<Action> out = new ArrayList<>();
        Conv c = conv(conv);
        c.cursor = Math.max(c.cursor, cursor);
        headSeen(c, head, out);
        if (more && c.cursor > cursorBefore) {
            out.add(new SendSync(conv, c.cursor)); // next page
        } else if (c.syncAgain) {
            c.syncAgain = false;
            out.add(new SendSync(conv, c.cursor));
        } else {
            // Done (or a page with more=true that did not advance: stop rather than loop; a hint retries).
            c.syncing = false;
        }
        if (c.cursor > c.serverDelivered && !c.ackInFlight) {
            scheduleFlush(out, false);
        }
        return out;
    }

    /**
     * A {@code caughtup} page was stored: {@code cursor} is the store's cursor of {@code conv} after
     * it, {@code upTo} the end of the range the page covered (a head the server knows of).
     */
    List<Action> onCaughtUp(String conv, long cursor, long upTo) {
        List<Action> out = new ArrayList<>();
        Conv c = conv(conv);
        c.cursor = Math.max(c.cursor, cursor);
        headSeen(c, upTo, out);
        if (c.cursor > c.serverDelivered && !c.ackInFlight) {
            scheduleFlush(out, false);
        }
        return out;
    }

    /** The sync failed (error reply, timeout, lost connection): the loop ends; a hint or reconnect starts another. */
    List<Action> onSyncFailed(String conv) {
        Conv c = conv(conv);
        c.syncing = false;
        c.syncAgain = false;
        return List.of();
    }

    /** The window ended: one cumulative ack per conversation that is ahead of the server and has none in flight. */
    List<Action> flushAcks() {
        flushScheduled = false;
        List<Action> out = new ArrayList<>();
        TreeMap<String, Conv> sorted = new TreeMap<>(convs);
        sorted.forEach((name, c) -> {
            if (!c.ackRetryWaiting) {
                sendAckIfDue(name, c, out);
            }
        });
        return out;
    }

    /** The backoff of a failed ack of {@code conv} ended: ack the cursor now if still due. */
    List<Action> retryAck(String conv) {
        List<Action> out = new ArrayList<>();
        Conv c = conv(conv);
        if (c.ackRetryWaiting) {
            c.ackRetryWaiting = false;
            sendAckIfDue(conv, c, out);
        }
        return out;
    }

    private static void sendAckIfDue(String name, Conv c, List<Action> out) {
        if (!c.ackInFlight && c.cursor > c.serverDelivered && c.refusedAhead == 0) {
            c.ackInFlight = true;
            c.ackInFlightSeq = c.cursor;
            out.add(new SendAck(name, c.cursor));
        }
    }

    /** {@code acked{delivered}}: the server's merged value. */
    List<Action> onAcked(String conv, long delivered) {
        List<Action> out = new ArrayList<>();
        Conv c = conv(conv);
        c.ackInFlight = false;
        c.ackFailures = 0;
        c.ackInternalErrors = 0;
        c.serverDelivered = Math.max(c.serverDelivered, Math.max(delivered, c.ackInFlightSeq));
        if (delivered > c.cursor) {
            requestSync(conv, out); // the server knows more than this device holds: fetch, never assume
        }
        if (c.cursor > c.serverDelivered) {
            scheduleFlush(out, false); // stored more while the ack was in flight
        }
        return out;
    }

    /** The ack failed: {@code code} of the error reply, or null for a timeout / lost connection. */
    List<Action> onAckFailed(String conv, ErrorCode code) {
        List<Action> out = new ArrayList<>();
        Conv c = conv(conv);
        c.ackInFlight = false;
        if (code == ErrorCode.CURSOR_AHEAD) {
            // The server did not take it: the local cursor stays the truth and the ack is owed. Sync,
            // and ack again once the server shows a head that covers it (headSeen), not in a loop.
            c.refusedAhead = Math.max(c.refusedAhead, c.ackInFlightSeq);
            requestSync(conv, out);
        } else if (code != null && RetryRule.counts(code) && retry.givesUpAfter(++c.ackInternalErrors)) {
            giveUp(conv, c, c.ackInternalErrors, out);
        } else if (code == null || code.retriable()) {
            c.ackFailures++;
            c.ackRetryWaiting = true;
            out.add(new RetryAck(conv, c.ackFailures));
        } else if (RetryRule.refusesRequest(code)) {
            giveUp(conv, c, 0, out); // e.g. NOT_MEMBER: do not repeat this value
        } else {
            // About the connection (STALE_INSTALL, ...): it ends; the next one starts over from subbed.
            c.serverDelivered = Math.max(c.serverDelivered, c.ackInFlightSeq);
        }
        return out;
    }

    private static void giveUp(String conv, Conv c, int internalErrors, List<Action> out) {
        c.serverDelivered = Math.max(c.serverDelivered, c.ackInFlightSeq);
        c.ackFailures = 0;
        c.ackInternalErrors = 0;
        out.add(new AckGivenUp(conv, c.ackInFlightSeq, internalErrors));
    }

    /** The server reported a head of at least {@code head}: an ack refused below it is due again. */
    private void headSeen(Conv c, long head, List<Action> out) {
        if (c.refusedAhead > 0 && head >= c.refusedAhead) {
            c.refusedAhead = 0;
            if (c.cursor > c.serverDelivered && !c.ackInFlight) {
                scheduleFlush(out, true);
            }
        }
    }

    private void requestSync(String conv, List<Action> out) {
        Conv c = conv(conv);
        if (c.syncing) {
            c.syncAgain = true;
            return;
        }
        c.syncing = true;
        out.add(new SendSync(conv, c.cursor));
    }

    private void scheduleFlush(List<Action> out, boolean retry) {
        if (!flushScheduled) {
            flushScheduled = true;
            out.add(new ScheduleAckFlush(retry));
        }
    }
}
