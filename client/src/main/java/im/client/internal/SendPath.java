package im.client.internal;

import im.client.api.ClientOptions;
import im.client.api.ConnectionLostException;
import im.client.api.ImErrorException;
import im.client.api.PendingSend;
import im.client.api.SendTimeoutException;
import im.client.api.SentAck;
import im.protocol.ClientFrame;
import im.protocol.Edit;
import im.protocol.ErrorCode;
import im.protocol.Event;
import im.protocol.Recall;
import im.protocol.ErrorFrame;
import im.protocol.Limits;
import im.protocol.Send;
import im.protocol.Sent;
import im.protocol.ServerFrame;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The send side: local validation, the durable outbox, one attempt per cmid at a time, the
 * keep/drop decision for every error reply ({@link RetryRule}) and the resends after a connect
 * or an {@code INTERNAL} answer. See {@link im.client.ImClient#send} for the contract.
 */
public final class SendPath {
    private static final Logger log = LoggerFactory.getLogger(SendPath.class);

    private final ClientOptions options;
    private final Clock clock;
    /** The outbox lives in the local store. */
    private final LocalStore store;
    private final Sessions sessions;
    private final Listeners listeners;
    private final RetryRule retry;
    private final PendingRequests.Rids rids;
    /** Automatic resends (the same thread as reconnects, so they never overlap). */
    private final Lane scheduler;
    /** Judges error replies off the socket reader (the outbox is fsynced) and off the scheduler (which may be waiting). */
    private final Executor judges;
    /** Where the futures of {@link #sendAsync} wait for their reply (threads added on demand). */
    private final Executor waiters;
    /** The one outstanding attempt per cmid, so concurrent resends of an entry share it (and its verdict). */
    private final ConcurrentHashMap<String, CompletableFuture<ServerFrame>> inflight = new ConcurrentHashMap<>();

    SendPath(ClientOptions options, Clock clock, LocalStore store, Sessions sessions, Listeners listeners,
             RetryRule retry, PendingRequests.Rids rids, Lane scheduler, Executor judges, Executor waiters) {
        this.waiters = waiters;
        this.options = options;
        this.clock = clock;
        this.store = store;
        this.sessions = sessions;
        this.listeners = listeners;
        this.retry = retry;
        this.rids = rids;
        this.scheduler = scheduler;
        this.judges = judges;
    }

    public SentAck send(String conv, String body, Duration timeout) throws IOException {
        return send(newEntry(conv, body), timeout);
    }

    /** See {@link im.client.ImClient#edit} and {@link im.client.ImClient#recall}: through the outbox as a send. */
    public SentAck change(String kind, String conv, long seq, String body, Duration timeout) throws IOException {
        return send(newChange(kind, conv, seq, body), timeout);
    }

    /** See {@link im.client.ImClient#editAsync} and {@link im.client.ImClient#recallAsync}. */
    public CompletableFuture<SentAck> changeAsync(String kind, String conv, long seq, String body, Duration timeout) throws IOException {
        return sendAsync(newChange(kind, conv, seq, body), timeout);
    }

    private SentAck send(PendingSend entry, Duration timeout) throws IOException {
        Objects.requireNonNull(timeout, "timeout");
        store.outboxAdd(entry);
        return deliver(entry, timeout);
    }

    /** See {@link im.client.ImClient#sendAsync}: durable before it returns; cancelling withdraws the entry. */
    public CompletableFuture<SentAck> sendAsync(String conv, String body, Duration timeout) throws IOException {
        return sendAsync(newEntry(conv, body), timeout);
    }

    private CompletableFuture<SentAck> sendAsync(PendingSend entry, Duration timeout) throws IOException {
        Objects.requireNonNull(timeout, "timeout");
        store.outboxAdd(entry);
        CompletableFuture<SentAck> result = new CompletableFuture<>();
        result.whenComplete((ack, err) -> {
            if (result.isCancelled()) {
                withdraw(entry.cmid()); // in the cancelling thread: withdrawn when cancel() returns
            }
        });
        runOn(waiters, () -> {
            if (result.isDone()) {
                return; // cancelled before the first attempt
            }
            try {
                result.complete(deliver(entry, timeout));
            } catch (IOException e) {
                result.completeExceptionally(e);
            }
        });
        return result;
    }

    /** See {@link im.client.ImClient#cancelPending}. */
    public boolean withdraw(String cmid) {
        try {
            boolean removed = store.outboxRemove(cmid);
            if (removed) {
                log.info("outbox entry {} withdrawn by the application", cmid);
            }
            return removed;
        } catch (IOException e) {
            log.warn("cannot withdraw outbox entry {} from {}: {}", cmid, store.file(), e.toString());
            return false;
        }
    }

    private static void runOn(Executor executor, Runnable task) {
        try {
            executor.execute(task);
        } catch (RejectedExecutionException e) {
            log.debug("client closed; task dropped");
        }
    }

    public String enqueue(String conv, String body) throws IOException {
        PendingSend entry = newEntry(conv, body);
        store.outboxAdd(entry);
        return entry.cmid();
    }

    public List<SentAck> resendPending() throws IOException {
        if (!sessions.isConnected()) {
            throw new ConnectionLostException("not connected");
        }
        List<PendingSend> entries = store.outbox();
        List<SentAck> acks = new ArrayList<>();
        for (PendingSend e : entries) {
            if (store.outboxGet(e.cmid()) == null) {
                continue; // confirmed meanwhile by another thread
            }
            try {
                acks.add(deliver(e, options.requestTimeout()));
            } catch (ConnectionLostException ex) {
                log.info("resend stopped after {} of {} entries: {}", acks.size(), entries.size(), ex.getMessage());
                break;
            } catch (ImErrorException ex) {
                if (ex.code().closesConnection()) {
                    break;
                }
                log.info("resend of cmid {} failed: {}", e.cmid(), ex.getMessage());
            } catch (SendTimeoutException ex) {
                log.info("resend of cmid {} failed: {}", e.cmid(), ex.getMessage());
            }
        }
        return acks;
    }

    public List<PendingSend> pending() {
        try {
            return store.outbox();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** After a connect (with autoReconnect): resends the outbox on the scheduler lane. */
    void resendLater() {
        try {
            scheduler.execute(() -> {
                try {
                    List<SentAck> acks = resendPending();
                    if (!acks.isEmpty()) {
                        log.info("resent {} pending message(s) after connect", acks.size());
                    }
                } catch (IOException e) {
                    // Entries stay in the outbox; the next connect or an explicit resendPending() retries them.
                    log.info("automatic resend stopped: {}", e.getMessage());
                }
            });
        } catch (RejectedExecutionException e) {
            log.debug("client closed; no automatic resend");
        }
    }

    /** Every {@code sent} (also late ones, whose waiter gave up): listeners, and for an outbox attempt the entry goes. */
    void onSent(String cmid, Sent s, boolean outboxEntry) {
        SentAck ack = new SentAck(s.conv(), cmid, s.seq(), s.mid(), s.dup(), s.epoch());
        listeners.fire("onSent", l -> l.onSent(ack), outboxEntry ? () -> removeConfirmed(ack.cmid()) : null);
    }

    /** A {@code sent} whose waiter may have given up: the message is committed, so the entry goes. */
    private void removeConfirmed(String cmid) {
        try {
            store.outboxRemove(cmid);
        } catch (IOException e) {
            // The entry stays pending; its next resend gets dup=true and removes it then.
            log.warn("cannot remove confirmed cmid {} from {}: {}", cmid, store.file(), e.toString());
        }
    }

    private PendingSend newEntry(String conv, String body) throws ImErrorException {
        checkConv(conv);
        checkBody(body);
        return new PendingSend(UUID.randomUUID().toString(), conv, body, clock.millis());
    }

    /** An edit ({@code body} its new text) or a recall ({@code body} ignored) of the message at {@code seq}. */
    private PendingSend newChange(String kind, String conv, long seq, String body) throws ImErrorException {
        checkConv(conv);
        if (seq < 1 || seq > Limits.MAX_SEQ) {
            throw new ImErrorException(ErrorCode.BAD_FIELD, null, "seq: must be an integer between 1 and " + Limits.MAX_SEQ);
        }
        if (Event.EDIT.equals(kind)) {
            checkBody(body);
        }
        return new PendingSend(UUID.randomUUID().toString(), conv, Event.EDIT.equals(kind) ? body : "", clock.millis(), 0, kind, seq);
    }

    private static void checkConv(String conv) throws ImErrorException {
        Objects.requireNonNull(conv, "conv");
        // Reject locally what the server would reject terminally, before anything is written.
        if (!Limits.isValidId(conv)) {
            throw new ImErrorException(ErrorCode.BAD_FIELD, null, "conv: must be a string matching " + Limits.ID_PATTERN);
        }
    }

    private static void checkBody(String body) throws ImErrorException {
        Objects.requireNonNull(body, "body");
        if (body.isEmpty()) {
            throw new ImErrorException(ErrorCode.BAD_FIELD, null, "body: must be a non-empty string");
        }
        if (!Limits.isWellFormed(body)) {
            throw new ImErrorException(ErrorCode.BAD_UTF8, null, "body: contains a lone surrogate (not valid UTF-8)");
        }
        if (!Limits.isStorableText(body)) {
            throw new ImErrorException(ErrorCode.BAD_FIELD, null, "body: must not contain U+0000 (NUL)");
        }
        if (Limits.utf8Length(body) > Limits.MAX_BODY_BYTES) {
            throw new ImErrorException(ErrorCode.BODY_TOO_LARGE, null,
                    "body: must be at most " + Limits.MAX_BODY_BYTES + " UTF-8 bytes");
        }
    }

    /** The frame of one attempt of {@code entry}. */
    private static ClientFrame frame(PendingSend entry, String rid) {
        return switch (entry.kind()) {
            case Event.EDIT -> new Edit(rid, entry.conv(), entry.cmid(), entry.ref(), entry.body());
            case Event.RECALL -> new Recall(rid, entry.conv(), entry.cmid(), entry.ref());
            default -> new Send(rid, entry.conv(), entry.cmid(), entry.body());
        };
    }

    /** One attempt for an outbox entry; the keep/remove decision for an error was made once per attempt ({@link #judge}). */
    private SentAck deliver(PendingSend entry, Duration timeout) throws IOException {
        ServerFrame reply = attempt(entry, timeout);
        if (reply instanceof Sent s) {
            store.outboxRemove(entry.cmid());
            return new SentAck(s.conv(), entry.cmid(), s.seq(), s.mid(), s.dup(), s.epoch());
        }
        if (reply instanceof ErrorFrame err) {
            throw new ImErrorException(err);
        }
        throw new IOException("unexpected reply to send of cmid " + entry.cmid() + ": " + reply);
    }

    /**
     * What an error reply means for the entry, decided once per attempt however many callers wait
     * for it: a refusing code drops the entry; {@code INTERNAL} is counted durably, and the entry
     * is retried after a backoff or, at the cap, given up. Returns the frame the callers see.
     */
    private ServerFrame judge(PendingSend entry, ErrorFrame err) {
        String cmid = entry.cmid();
        try {
            if (RetryRule.refusesRequest(err.code())) {
                giveUp(cmid, err);
                return err;
            }
            if (!RetryRule.counts(err.code())) {
                return err; // UNAVAILABLE, RATE_LIMITED: transient by definition, not capped
            }
            PendingSend counted = store.outboxRecordInternalError(cmid);
            if (counted == null) {
                return err; // confirmed or given up meanwhile
            }
            if (retry.givesUpAfter(counted.internalErrors())) {
                ErrorFrame last = RetryRule.givenUp(err, counted.internalErrors());
                giveUp(cmid, last);
                return last;
            }
            scheduleInternalRetry(cmid, counted.internalErrors());
        } catch (IOException e) {
            // The outbox could not be changed: the entry stays as it was, and a later attempt decides again.
            log.warn("cannot update outbox entry {} in {} after {}: {}", cmid, store.file(), err.code(), e.toString());
        }
        return err;
    }

    /** Removes the entry for good and tells the listeners (once: only the removal that found it reports). */
    private void giveUp(String cmid, ErrorFrame err) throws IOException {
        PendingSend entry = store.outboxGet(cmid);
        if (entry == null || !store.outboxRemove(cmid)) {
            return;
        }
        log.warn("gave up outbox entry {}: {} {}", cmid, err.code(), err.msg());
        ImErrorException cause = new ImErrorException(err);
        listeners.fire("onSendFailed", l -> l.onSendFailed(entry, cause));
    }

    /**
     * After the {@code n}th INTERNAL, resends the entry once the backoff for attempt {@code n - 1}
     * has passed, if still pending and connected (else the next connect resends it). Only with
     * {@code autoReconnect}, the switch for resends nobody asked for.
     */
    private void scheduleInternalRetry(String cmid, int n) {
        if (!options.autoReconnect()) {
            return;
        }
        long delay = retry.backoffMillis(n - 1);
        try {
            scheduler.schedule(() -> {
                try {
                    PendingSend entry = store.outboxGet(cmid);
                    if (entry == null || !sessions.isConnected()) {
                        return;
                    }
                    deliver(entry, options.requestTimeout());
                } catch (IOException e) {
                    log.info("retry of cmid {} after INTERNAL failed: {}", cmid, e.getMessage());
                }
            }, delay, TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            log.debug("client closed; no retry of cmid {}", cmid);
        }
    }

    private ServerFrame attempt(PendingSend entry, Duration timeout) throws IOException {
        Connection conn = sessions.current();
        String cmid = entry.cmid();
        CompletableFuture<ServerFrame> fut = inflight.compute(cmid, (k, old) -> old != null && !old.isDone()
                ? old
                : conn.submit(frame(entry, rids.next()), true)
                        .thenApplyAsync(r -> r instanceof ErrorFrame err ? judge(entry, err) : r, judges));
        fut.whenComplete((r, e) -> inflight.remove(cmid, fut));
        try {
            return PendingRequests.await(fut, timeout, "send of cmid " + cmid);
        } catch (SendTimeoutException e) {
            // The next attempt sends afresh; a late reply to this one still confirms the entry.
            inflight.remove(cmid, fut);
            throw e;
        }
    }
}
