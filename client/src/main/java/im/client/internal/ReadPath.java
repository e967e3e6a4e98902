package im.client.internal;

import im.client.api.ClientOptions;
import im.client.api.ConnectionLostException;
import im.client.api.ImErrorException;
import im.client.api.ReadStatus;
import im.client.api.SendTimeoutException;
import im.protocol.ErrorCode;
import im.protocol.ErrorFrame;
import im.protocol.Limits;
import im.protocol.Read;
import im.protocol.ReadAck;
import im.protocol.ReadState;
import im.protocol.ServerFrame;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BiFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code read} requests ({@link im.client.ImClient#markRead}), coalesced like acks: at most one in
 * flight per conversation; the calls made meanwhile merge into one follow-up carrying the highest
 * seq among them, sent when the one in flight is answered (or failed), and their futures complete
 * with its outcome. Each {@code readack}'s state is applied by the receive path (the unread rule)
 * before the futures complete with the conversation's read status. Runs on the receive lane (a call
 * reaches it through its conversation's inbox, see {@link #inboxes}); the futures complete on the
 * waiter threads, never on the lane.
 */
final class ReadPath {
    private static final Logger log = LoggerFactory.getLogger(ReadPath.class);
    /**
     * At most one read per conversation is sent per this interval: the calls made meanwhile merge
     * into the follow-up, sent when it has passed. A user reading as messages arrive in a busy
     * group then costs the server one read transaction a second per device, not one per message.
     */
    static final long READ_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);

    /** One {@code markRead} call. */
    private record Waiter(long seq, CompletableFuture<ReadStatus> future) {
    }

    /** Calls of a conversation waiting for the lane; guarded by {@link #inboxes}' compute. */
    private static final class Inbox {
        final List<Waiter> waiters = new ArrayList<>();
        /** The lane holds the conversation and takes the waiters at its next {@link #sendNext}: calls post no task. */
        boolean held;
        /** A lane task that takes them is queued. */
        boolean posted;
    }

    /** Per conversation, receive lane only: the callers of the read in flight (null: none) and those of the follow-up. */
    private static final class Conv {
        List<Waiter> inFlight;
        final List<Waiter> next = new ArrayList<>();
        /** A seq the server may not have taken yet (its read timed out or was answered UNAVAILABLE...): sent again until answered; 0: none. */
        long owed;
        /** Retriable failures in a row, for the backoff; INTERNAL answers among them, for the cap. */
        int failures;
        int internalErrors;
        /** No read is sent before this (nanoTime): after a failure, or within READ_INTERVAL of the last; a scheduled task sends it. */
        long backoffUntil;
        /** When the scheduled {@link #sendNext} runs (nanoTime); meaningful while {@code wakeScheduled}. */
        long wakeAt;
        boolean wakeScheduled;
    }

    private final ClientOptions options;
    private final Sessions sessions;
    private final PendingRequests.Rids rids;
    private final Lane lane;
    private final Executor waiters;
    /** Applies a read state on the lane (the receive path's rule) and returns the conversation's status after it. */
    private final BiFunction<String, ReadState, ReadStatus> apply;
    private final Map<String, Conv> convs = new HashMap<>();
    /**
     * Calls not yet taken by the lane, per conversation. While the lane holds a conversation (its entry
     * in {@link #convs}: a read in flight, or one waiting for its interval, a backoff or a connection),
     * a call only joins its inbox, which the lane's next {@link #sendNext} takes: no lane task per call
     * (a recipient calling markRead per message received made one hand-off each, 12 a second per
     * conversation in the capacity bench, for one read a second).
     */
    private final ConcurrentHashMap<String, Inbox> inboxes = new ConcurrentHashMap<>();
    private final RetryRule retry;
    /** Every call not completed yet, whatever its state: failed when the client closes. */
    private final java.util.Set<CompletableFuture<ReadStatus>> open = java.util.concurrent.ConcurrentHashMap.newKeySet();

    ReadPath(ClientOptions options, Sessions sessions, PendingRequests.Rids rids, Lane lane, Executor waiters,
             BiFunction<String, ReadState, ReadStatus> apply) {
        this.options = options;
        this.sessions = sessions;
        this.rids = rids;
        this.lane = lane;
        this.waiters = waiters;
        this.apply = apply;
        this.retry = RetryRule.of(options);
    }

    /** See {@link im.client.ImClient#markRead}. */
    CompletableFuture<ReadStatus> markRead(String conv, long seq) {
        CompletableFuture<ReadStatus> result = new CompletableFuture<>();
        if (conv == null || !Limits.isValidId(conv)) {
            result.completeExceptionally(new ImErrorException(ErrorCode.BAD_FIELD, null,
                    "conv: must be a string matching " + Limits.ID_PATTERN));
            return result;
        }
        if (seq < 0) {
            result.completeExceptionally(new ImErrorException(ErrorCode.BAD_FIELD, null, "seq: must not be negative, got " + seq));
            return result;
        }
        open.add(result);
        result.whenComplete((r, e) -> open.remove(result));
        Waiter w = new Waiter(seq, result);
        boolean[] post = new boolean[1];
        inboxes.compute(conv, (k, box) -> {
            Inbox b = box == null ? new Inbox() : box;
            b.waiters.add(w);
            if (!b.held && !b.posted) {
                b.posted = true;
                post[0] = true;
            }
            return b;
        });
        if (post[0]) {
            try {
                lane.execute(() -> sendNext(conv));
            } catch (RejectedExecutionException e) {
                result.completeExceptionally(new ConnectionLostException("client is closed"));
            }
        }
        return result;
    }

    /** A connection was installed (on the lane): the reads that waited for one are sent. */
    void connected() {
        for (String conv : List.copyOf(convs.keySet())) {
            sendNext(conv);
        }
    }

    /** The client closes: every call not answered fails. */
    void closed() {
        ConnectionLostException cause = new ConnectionLostException("client is closed");
        for (CompletableFuture<ReadStatus> f : List.copyOf(open)) {
            f.completeExceptionally(cause);
        }
    }

    /**
     * Sends the follow-up of {@code conv} if none is in flight and no backoff runs: the highest seq of
     * its callers that did not cancel, and of a read owed since a failure.
     */
    private void sendNext(String conv) {
        Conv c = take(conv);
        if (c == null || c.inFlight != null) {
            return;
        }
        c.next.removeIf(w -> w.future().isDone());   // cancelled: a withdrawn call does not raise the seq
        long wait = c.backoffUntil - System.nanoTime();
        if (c.next.isEmpty() && c.owed == 0) {
            // Within the interval the entry stays, so that a call meanwhile waits for the interval's end
            // (removed, the next call would start afresh and send at once); after it, nothing is left to do.
            if (wait > 0) wake(conv, c, wait);
            else release(conv);
            return;
        }
        if (wait > 0) {
            wake(conv, c, wait);
            return;
        }
        Connection conn;
        try {
            conn = sessions.current();
        } catch (ConnectionLostException e) {
            return;   // offline: the calls wait for the next connection (connected())
        }
        List<Waiter> batch = List.copyOf(c.next);
        c.next.clear();
        long seq = Math.max(c.owed, batch.stream().mapToLong(Waiter::seq).max().orElse(0));
        c.inFlight = batch;
        c.backoffUntil = System.nanoTime() + READ_INTERVAL_NANOS;   // the next read of conv waits for the interval
        Read frame = new Read(rids.next(), conv, seq);
        conn.submit(frame, false)
                .orTimeout(options.requestTimeout().toMillis(), TimeUnit.MILLISECONDS)
                .whenComplete((r, err) -> {
                    if (err != null) {
                        conn.pending.remove(frame.rid());
                    }
                    try {
                        lane.execute(() -> onReply(conv, frame, batch, r, err));
                    } catch (RejectedExecutionException e) {
                        fail(batch, new ConnectionLostException("client is closed"));
                    }
                });
    }

    private void onReply(String conv, Read frame, List<Waiter> batch, ServerFrame r, Throwable err) {
        Conv c = convs.get(conv);
        c.inFlight = null;
        if (r instanceof ReadAck ack) {
            c.owed = 0;
            c.failures = 0;
            c.internalErrors = 0;
            try {
                ReadStatus status = apply.apply(conv, ack.state());
                complete(batch, status);
            } catch (RuntimeException e) {
                fail(batch, e);
            }
        } else if (r instanceof ErrorFrame e) {
            log.info("read of {} up to {} refused: {} {}", conv, frame.seq(), e.code(), e.msg());
            fail(batch, new ImErrorException(e));
            boolean givenUp = RetryRule.counts(e.code()) && retry.givesUpAfter(++c.internalErrors);
            if (RetryRule.refusesRequest(e.code()) || givenUp) {
                c.owed = 0;   // the read itself is refused: sending it again fails again
            } else {
                owe(conv, c, frame.seq());   // UNAVAILABLE, RATE_LIMITED, INTERNAL (capped): the server may take it later
                return;
            }
        } else {
            Throwable cause = err instanceof CompletionException ce && ce.getCause() != null ? ce.getCause() : err;
            if (cause instanceof ConnectionLostException) {
                // The connection ended first: sent again on the next one (a read is idempotent: the cursor only moves up).
                c.next.addAll(0, batch);
                log.info("read of {} up to {} waits for the next connection: {}", conv, frame.seq(), cause.toString());
                return;
            }
            if (cause instanceof TimeoutException) {
                cause = new SendTimeoutException("no reply to read of " + conv + " up to " + frame.seq() + " within "
                        + options.requestTimeout().toMillis() + " ms");
            } else if (!(cause instanceof IOException) && !(cause instanceof RuntimeException)) {
                cause = new IOException("read of " + conv + " failed: " + r, cause);
            }
            log.info("read of {} up to {} failed: {}", conv, frame.seq(), cause.toString());
            fail(batch, cause);
            if (cause instanceof SendTimeoutException) {
                owe(conv, c, frame.seq());   // it may have committed, its answer lost: sent again (reads are idempotent)
                return;
            }
        }
        sendNext(conv);   // calls made meanwhile go once the interval since this read has passed
    }

    /**
     * Lane: the conversation's entry with the calls of its inbox joined to its follow-up, the lane now
     * holding it (created if calls wait); null when neither exists.
     */
    private Conv take(String conv) {
        Conv c = convs.get(conv);
        if (c == null && !inboxes.containsKey(conv)) {
            return null;
        }
        List<Waiter> got = new ArrayList<>();
        inboxes.compute(conv, (k, box) -> {
            Inbox b = box == null ? new Inbox() : box;
            got.addAll(b.waiters);
            b.waiters.clear();
            b.posted = false;
            b.held = true;
            return b;
        });
        if (c == null) {
            c = new Conv();
            convs.put(conv, c);
        }
        c.next.addAll(got);
        return c;
    }

    /** Lane: drops the idle conversation, unless a call joined its inbox meanwhile (then it is sent). */
    private void release(String conv) {
        boolean[] more = new boolean[1];
        inboxes.compute(conv, (k, box) -> {
            if (box != null && !box.waiters.isEmpty()) {
                more[0] = true;
                return box;
            }
            return null;
        });
        if (more[0]) {
            sendNext(conv);
        } else {
            convs.remove(conv);
        }
    }

    /**
     * Makes {@link #sendNext} of {@code conv} run in {@code waitNanos} (or sooner, if one is scheduled
     * for sooner already): whatever ends a wait (the read interval, a backoff, a reconnect within
     * either) then sends what is waiting.
     */
    private void wake(String conv, Conv c, long waitNanos) {
        long at = System.nanoTime() + waitNanos;
        if (c.wakeScheduled && c.wakeAt - at <= 0) {
            return;
        }
        c.wakeScheduled = true;
        c.wakeAt = at;
        try {
            lane.schedule(() -> {
                if (c.wakeAt == at) c.wakeScheduled = false;   // a later-scheduled sooner wake supersedes this one
                sendNext(conv);
            }, waitNanos, TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException e) {
            log.debug("client closed; no follow-up read of {}", conv);
        }
    }

    /**
     * The read up to {@code seq} of {@code conv} failed in a way that may pass: it is owed, and sent
     * again (with what was asked meanwhile) after a backoff, until the server answers it; without that a
     * read committed whose answer was lost would leave this device's read state behind for good.
     */
    private void owe(String conv, Conv c, long seq) {
        c.owed = Math.max(c.owed, seq);
        long wait = TimeUnit.MILLISECONDS.toNanos(retry.backoffMillis(c.failures++));
        c.backoffUntil = System.nanoTime() + wait;
        wake(conv, c, wait);
    }

    private void complete(List<Waiter> batch, ReadStatus status) {
        onWaiters(() -> batch.forEach(w -> w.future().complete(status)));
    }

    private void fail(List<Waiter> batch, Throwable cause) {
        onWaiters(() -> batch.forEach(w -> w.future().completeExceptionally(cause)));
    }

    /** The callers' continuations run on a waiter thread, never on the receive lane. */
    private void onWaiters(Runnable task) {
        try {
            waiters.execute(task);
        } catch (RejectedExecutionException e) {
            task.run();
        }
    }
}
