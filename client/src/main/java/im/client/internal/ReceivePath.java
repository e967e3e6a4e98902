package im.client.internal;

import im.client.api.ClientOptions;
import im.client.api.ConnectionLostException;
import im.client.api.ConversationSummary;
import im.client.api.ImErrorException;
import im.client.api.SendTimeoutException;
import im.client.api.ReadStatus;
import im.client.api.ReceivedEvent;
import im.protocol.Ack;
import im.protocol.Acked;
import im.protocol.CatchUp;
import im.protocol.CatchUpPosition;
import im.protocol.CaughtUp;
import im.protocol.CaughtUpRange;
import im.protocol.ClientFrame;
import im.protocol.ErrorFrame;
import im.protocol.Event;
import im.protocol.EventPush;
import im.protocol.Hint;
import im.protocol.Limits;
import im.protocol.ReadState;
import im.protocol.ServerFrame;
import im.protocol.Sub;
import im.protocol.Subbed;
import im.protocol.Sync;
import im.protocol.Synced;
import im.protocol.Receipt;
import im.protocol.Receipts;
import im.protocol.ReceiptsReply;
import im.protocol.Typing;
import im.protocol.TypingPush;
import im.protocol.Unread;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The receive path, on one receive lane (one task at a time, in order; never the socket reader): {@code sub} after every
 * connect, pushed events stored in batches, sync loops, cumulative acks of the durable cursor, and
 * the retries of those requests. The decisions are {@link ReceiveLogic}'s; this class performs
 * them against the {@link LocalStore} and the current connection. The read state too: each
 * {@code subbed} entry's, {@code readack}s ({@link ReadPath}) and {@code unread} pushes are applied
 * by the store's rule, and {@link im.client.api.ClientListener#onUnread} told of every change of a
 * conversation's read cursor or unread count (also those stored events make).
 */
public final class ReceivePath {
    private static final Logger log = LoggerFactory.getLogger(ReceivePath.class);

    private final ClientOptions options;
    private final LocalStore store;
    private final Sessions sessions;
    private final Listeners listeners;
    private final RetryRule retry;
    private final PendingRequests.Rids rids;
    private final ClientFaults faults;
    /** Closes the whole client (a fault hook simulated a crash). */
    private final Runnable closeClient;
    /** The receive lane: store writes, sync/ack decisions, in order. */
    private final Lane receiver;
    /** Receive lane only. */
    private final ReceiveLogic logic;
    /** Receive lane only: the connection the receive state belongs to; replies of older ones are ignored. */
    private Connection recvConn;
    /** Receive lane only: consecutive failed subs of the current connection, and INTERNAL answers among them. */
    private int subFailures;
    private int subInternalErrors;
    /**
     * Receive lane only: the conversations {@code subbed} found behind their head whose sync loop has
     * not ended yet (null: no recovery under way on this connection), and those whose sync failed.
     */
    private Set<String> recovering;
    private List<String> recoveryFailed;
    /**
     * Receive lane only: the heads {@code subbed} reported for the conversations behind, collected
     * over the pages of the current pass and caught up by {@code catchup} when the pass ends (null:
     * no pass under way); and the conversation the next page of the pass starts after.
     */
    private Map<String, Long> behind;
    private String subAfter;
    /** Receive lane only: a {@code catchup} pass is under way; recovery is not reported before it ends. */
    private boolean catchingUp;
    /** Pushed events not yet stored; drained in batches by the receive lane (one fsync per batch). */
    private final ConcurrentLinkedQueue<Event> pushQueue = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean drainScheduled = new AtomicBoolean();
    /** {@code read} requests, on the receive lane. */
    private final ReadPath reads;
    /** Receive lane only: the read status last reported per conversation (absent: 0 and 0). */
    private final Map<String, ReadStatus> shown = new java.util.HashMap<>();
    /** Set when a {@link ClientFaults} hook simulated a crash: the receive path does nothing more. */
    private volatile boolean crashed;

    ReceivePath(ClientOptions options, LocalStore store, Sessions sessions, Listeners listeners, RetryRule retry,
                PendingRequests.Rids rids, ClientFaults faults, Runnable closeClient, Lane receiver,
                Executor waiters) {
        this.options = options;
        this.store = store;
        this.sessions = sessions;
        this.listeners = listeners;
        this.retry = retry;
        this.rids = rids;
        this.faults = faults;
        this.closeClient = closeClient;
        this.receiver = receiver;
        this.logic = new ReceiveLogic(retry);
        store.cursors().forEach(logic::cursor);
        this.reads = new ReadPath(options, sessions, rids, receiver, waiters, this::applyReadState);
        try {
            shown.putAll(store.readStatuses());
        } catch (IOException e) {
            // Then the first change of each conversation is reported even if its count did not move.
            log.warn("cannot read the unread counts from {}: {}", store.file(), e.toString());
        }
    }

    void shutdown() {
        reads.closed();
        receiver.shutdownNow();
    }

    /** After {@link #shutdown}: waits up to {@code millis} for the receive lane to finish its task; false if it did not. */
    boolean awaitStopped(long millis) {
        return receiver.awaitStopped(millis);
    }

    /** True on the receive lane (a simulated crash closes the client from there). */
    boolean runsHere() {
        return receiver.runsHere();
    }

    /** A connection was installed: reset the receive state and subscribe (with autoReceive). */
    void connected(Connection conn) {
        if (options.autoReceive()) {
            onReceiver(() -> startReceive(conn));
        }
        onReceiver(reads::connected);   // the reads that waited for a connection
    }

    /** A frame answering no request: pushes are queued for the next batch, hints start a sync, read states are applied. */
    void onUnmatched(Connection conn, ServerFrame frame) {
        if (frame instanceof Unread u) {
            onReceiver(() -> applyReadState(u.conv(), u.state()));
            return;
        }
        if (frame instanceof TypingPush t) {
            listeners.fire("onTyping", l -> l.onTyping(t.conv(), t.user()));
            return;
        }
        if (!options.autoReceive()) {
            return;
        }
        if (frame instanceof EventPush ep) {
            pushQueue.add(ep.ev());
            if (drainScheduled.compareAndSet(false, true)) {
                onReceiver(() -> drainPushes(conn));
            }
        } else if (frame instanceof Hint h) {
            onReceiver(() -> {
                if (conn == recvConn) {
                    perform(conn, logic.onHint(h.conv(), h.head()));
                }
            });
        }
    }

    /** The API of the receive side is documented on {@link im.client.ImClient#cursor} and its neighbours. */
    public long cursor(String conv) {
        return store.cursor(Objects.requireNonNull(conv, "conv"));
    }

    public Map<String, Long> cursors() {
        return store.cursors();
    }

    public List<ReceivedEvent> events(String conv) {
        try {
            return store.events(Objects.requireNonNull(conv, "conv"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The local queries are documented on {@link im.client.ImClient#conversations} and its neighbours. */
    public List<ConversationSummary> conversations(ConversationSummary after, int limit) throws IOException {
        return store.conversations(after, limit);
    }

    public List<ReceivedEvent> eventsBefore(String conv, long beforeSeq, int limit) throws IOException {
        return store.eventsBefore(conv, beforeSeq, limit);
    }

    public List<ReceivedEvent> editHistory(String conv, long seq) throws IOException {
        return store.editHistory(Objects.requireNonNull(conv, "conv"), seq);
    }

    public List<ReceivedEvent> eventsAfter(String conv, long afterSeq, int limit) throws IOException {
        store.checkLimit(limit);
        return store.eventsAfter(conv, afterSeq, limit);
    }

    public List<ReceivedEvent> search(String text, String conv, ReceivedEvent before, int limit) throws IOException {
        return store.search(text, conv, before, limit);
    }

    public CompletableFuture<ReadStatus> markRead(String conv, long seq) {
        return reads.markRead(conv, seq);
    }

    public ReadStatus readStatus(String conv) throws IOException {
        return store.readStatus(conv);
    }

    public long unreadTotal() throws IOException {
        return store.unreadTotal();
    }

    /**
     * Receive lane: applies {@code state} of {@code conv} if it is the latest ({@link LocalStore#applyReadState})
     * and reports a change; returns the conversation's read status now.
     *
     * @throws UncheckedIOException if the store cannot be read or written
     */
    private ReadStatus applyReadState(String conv, ReadState state) {
        try {
            if (store.applyReadState(conv, state)) {
                return reportUnread(conv);
            }
            return store.readStatus(conv);
        } catch (IOException e) {
            log.error("cannot apply the read state of {} in {}: {}", conv, store.file(), e.toString());
            throw new UncheckedIOException(e);
        }
    }

    /** Receive lane: the read states of a {@code subbed} page, in one transaction. */
    private void applyReadStates(List<im.protocol.ConvState> page) {
        Map<String, ReadState> states = new LinkedHashMap<>();
        page.forEach(c -> states.put(c.conv(), c.readState()));
        try {
            for (String conv : store.applyReadStates(states)) {
                reportUnread(conv);
            }
        } catch (IOException e) {
            // The next subbed gives them again; reads and unread pushes meanwhile apply as usual.
            log.error("cannot apply the read states of a subbed page in {}: {}", store.file(), e.toString());
        }
    }

    /** Receive lane: tells the listeners the read status of {@code conv} if it changed since last told. */
    private ReadStatus reportUnread(String conv) throws IOException {
        ReadStatus now = store.readStatus(conv);
        if (!now.equals(shown.getOrDefault(conv, new ReadStatus(conv, 0, 0)))) {
            shown.put(conv, now);
            listeners.fire("onUnread", l -> l.onUnread(conv, now.read(), now.unread()));
        }
        return now;
    }

    /** See {@link im.client.ImClient#receipts}. */
    public CompletableFuture<List<Receipt>> receipts(String conv, List<Long> seqs) {
        Objects.requireNonNull(conv, "conv");
        Connection conn;
        try {
            conn = sessions.current();
        } catch (ConnectionLostException e) {
            return CompletableFuture.failedFuture(e);
        }
        String what = "receipts of " + conv;
        return conn.submit(new Receipts(rids.next(), conv, seqs), false)
                .orTimeout(options.requestTimeout().toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS)
                .handle((reply, error) -> {
                    if (error instanceof java.util.concurrent.TimeoutException) {
                        throw new java.util.concurrent.CompletionException(new SendTimeoutException("no reply to " + what + " within "
                                + options.requestTimeout().toMillis() + " ms"));
                    }
                    if (error != null) throw new java.util.concurrent.CompletionException(error);
                    if (reply instanceof ErrorFrame err) throw new java.util.concurrent.CompletionException(new ImErrorException(err));
                    if (reply instanceof ReceiptsReply r) return r.receipts();
                    throw new java.util.concurrent.CompletionException(new IOException("unexpected reply to " + what + ": " + reply));
                });
    }

    /** When a typing of each conversation was last written (nanoTime), for {@link #typing}. */
    private final Map<String, Long> typedAt = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * Tells the conversation's other members' online devices that the user is typing, at most once per
     * {@link #TYPING_EVERY_NANOS} per conversation (a call within it is dropped here, as the server
     * would). True if a frame was written.
     */
    public boolean typing(String conv) {
        Objects.requireNonNull(conv, "conv");
        long now = System.nanoTime();
        Long last = typedAt.get(conv);
        if (last != null && now - last < TYPING_EVERY_NANOS) {
            return false;
        }
        Connection conn;
        try {
            conn = sessions.current();
        } catch (ConnectionLostException e) {
            return false;
        }
        if (!conn.sendOneWay(new Typing(rids.next(), conv))) {
            return false;
        }
        typedAt.put(conv, now);
        return true;
    }

    /** The least time between two typing frames of one conversation: the server's default throttle. */
    static final long TYPING_EVERY_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(2);

    public void syncNow(String conv) throws ConnectionLostException {
        Objects.requireNonNull(conv, "conv");
        if (!options.autoReceive()) {
            throw new IllegalStateException("syncNow needs autoReceive");
        }
        Connection conn = sessions.current();
        onReceiver(() -> {
            if (conn == recvConn) {
                perform(conn, logic.syncNow(conv));
            }
        });
    }

    private void onReceiver(Runnable task) {
        try {
            receiver.execute(unlessCrashed(task));
        } catch (RejectedExecutionException e) {
            log.debug("client closed; receive task dropped");
        }
    }

    /** Runs {@code task} on the receive lane after {@code delayMillis}. */
    private void onReceiverAfter(long delayMillis, Runnable task) {
        try {
            receiver.schedule(unlessCrashed(task), delayMillis, TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            log.debug("client closed; delayed receive task dropped");
        }
    }

    private Runnable unlessCrashed(Runnable task) {
        return () -> {
            if (crashed) {
                return;
            }
            try {
                task.run();
            } catch (RuntimeException e) {
                log.error("receive task failed", e);
            }
        };
    }

    /** After auth: reset the per-connection receive state and subscribe. */
    private void startReceive(Connection conn) {
        recvConn = conn;
        recovering = null;
        try {
            store.selfUser(conn.device.user()); // its own messages are never unread
        } catch (IOException e) {
            log.warn("cannot record the device's user in {}: {}", store.file(), e.toString());
        }
        logic.connected();
        store.cursors().forEach(logic::cursor);
        subFailures = 0;
        subInternalErrors = 0;
        behind = new LinkedHashMap<>();
        subAfter = null;
        catchingUp = false;
        subscribePage(conn);
    }

    /** Asks for the next page of the {@code sub} pass (the first when {@link #subAfter} is null). */
    private void subscribePage(Connection conn) {
        Sub sub = new Sub(rids.next(), subAfter, Limits.SUB_DEFAULT_LIMIT);
        reply(conn, sub, (r, err) -> onSubReply(conn, r, err));
    }

    private void onSubReply(Connection conn, ServerFrame r, Throwable err) {
        if (conn != recvConn) {
            return;
        }
        if (r instanceof Subbed s) {
            log.debug("subscribed: {} conversation(s){}", s.convs().size(), s.more() ? ", more follow" : "");
            subFailures = 0;
            subInternalErrors = 0;
            applyReadStates(s.convs());
            s.convs().stream().filter(c -> c.head() > store.cursor(c.conv())).forEach(c -> behind.put(c.conv(), c.head()));
            perform(conn, logic.onSubbed(s.convs(), false));   // those behind are caught up once the pass ends
            if (s.more() && !s.convs().isEmpty()) {
                subAfter = s.convs().get(s.convs().size() - 1).conv();
                subscribePage(conn);
                return;
            }
            recovering = new LinkedHashSet<>(behind.keySet());
            recoveryFailed = new ArrayList<>();
            if (recovering.isEmpty()) {
                recoveryStep(null);
            } else {
                catchingUp = true;
                catchUp(conn, null);
            }
            return;
        }
        ErrorFrame ef = r instanceof ErrorFrame e ? e : null;
        if (ef != null && RetryRule.counts(ef.code()) && retry.givesUpAfter(++subInternalErrors)) {
            subscribeFailed(RetryRule.givenUp(ef, subInternalErrors));
            return;
        }
        if (ef != null && !ef.code().retriable()) {
            if (RetryRule.refusesRequest(ef.code())) {
                subscribeFailed(ef);
            } else {
                log.warn("sub failed ({}); not retrying on this connection", ef);
            }
            return;
        }
        if (!conn.isOpen()) {
            return; // the next connection subscribes again
        }
        long delay = retry.backoffMillis(subFailures++);
        log.warn("sub failed ({}); retrying in {} ms", err != null ? err.toString() : r, delay);
        onReceiverAfter(delay, () -> {
            if (conn == recvConn && conn.isOpen()) {
                subscribePage(conn);   // the page that failed, not the pass from the start
            }
        });
    }

    /** Asks for a page of what this device has not acknowledged across its conversations. */
    private void catchUp(Connection conn, CatchUpPosition after) {
        CatchUp f = new CatchUp(rids.next(), after, Limits.CATCHUP_DEFAULT_LIMIT);
        reply(conn, f, (r, err) -> onCaughtUpReply(conn, r, err));
    }

    /**
     * A {@code caughtup} page: stored in one transaction, its ranges acked like synced pages; the
     * next page while {@code more}. When the pass ends, or fails (an older server, an error, a
     * timeout), each conversation still behind the head {@code subbed} reported syncs on its own.
     */
    private void onCaughtUpReply(Connection conn, ServerFrame reply, Throwable err) {
        if (conn != recvConn || !catchingUp) {
            return;
        }
        if (!(reply instanceof CaughtUp page)) {
            log.info("catchup failed ({}); syncing each conversation behind", err != null ? err.toString() : reply);
            syncStillBehind(conn);
            return;
        }
        for (String conv : page.convs().stream().map(CaughtUpRange::conv).toList()) {
            List<Long> seqs = new ArrayList<>();
            try {
                for (Event e : page.events()) {
                    if (e.conv().equals(conv) && e.seq() > store.cursor(conv) && !store.contains(conv, e.seq())) {
                        seqs.add(e.seq());
                    }
                }
            } catch (IOException e) {
                log.error("cannot read {} before storing a catchup page: {}", store.file(), e.toString());
                syncStillBehind(conn);
                return;
            }
            if (!fault("beforeStore", () -> faults.beforeStore(conv, seqs))) {
                return;
            }
        }
        LocalStore.Result r;
        try {
            r = store.applyCatchUp(page.events(), page.convs());
        } catch (IOException | IllegalArgumentException e) {
            log.error("cannot store a catchup page in {}: {}", store.file(), e.toString());
            syncStillBehind(conn);
            return;
        }
        if (!reportStored(r)) {
            return;
        }
        for (CaughtUpRange range : page.convs()) {
            perform(conn, logic.onCaughtUp(range.conv(), store.cursor(range.conv()), range.upTo()));
        }
        if (page.more()) {
            catchUp(conn, page.after());
        } else {
            syncStillBehind(conn);
        }
    }

    /** The catch-up ended: a conversation still below the head {@code subbed} reported syncs (its loop ends its recovery). */
    private void syncStillBehind(Connection conn) {
        catchingUp = false;
        for (String conv : List.copyOf(recovering)) {
            if (store.cursor(conv) >= behind.getOrDefault(conv, 0L)) {
                recovering.remove(conv);
            } else {
                perform(conn, logic.syncNow(conv));
            }
        }
        recoveryStep(null);
    }

    private void subscribeFailed(ErrorFrame err) {
        log.error("sub given up on this connection: {} {}", err.code(), err.msg());
        ImErrorException cause = new ImErrorException(err);
        listeners.fire("onSubscribeFailed", l -> l.onSubscribeFailed(cause));
        listeners.fire("onRecovery", l -> l.onRecovery(false, List.of()));
    }

    /** Sends a request whose reply (or failure, timeout) is handled on the receive lane. */
    private void reply(Connection conn, ClientFrame frame, BiConsumer<ServerFrame, Throwable> then) {
        conn.submit(frame, false)
                .orTimeout(options.requestTimeout().toMillis(), TimeUnit.MILLISECONDS)
                .whenComplete((r, err) -> {
                    if (err != null) {
                        conn.pending.remove(frame.rid());
                    }
                    onReceiver(() -> then.accept(r, err));
                });
    }

    private void drainPushes(Connection conn) {
        drainScheduled.set(false);
        List<Event> batch = new ArrayList<>();
        for (Event e = pushQueue.poll(); e != null; e = pushQueue.poll()) {
            batch.add(e);
        }
        // An event the store cannot hold (a seq beyond its key range) is dropped, never acked: its
        // conversation's cursor stays below it. The rest of the batch is stored.
        batch.removeIf(e -> {
            if (LocalStore.holds(e)) {
                return false;
            }
            log.error("pushed event {}#{} dropped: the local store holds seqs 1 to {}", e.conv(), e.seq(), LocalStore.MAX_SEQ);
            return true;
        });
        if (batch.isEmpty()) {
            return;
        }
        Map<String, Long> maxSeq = new LinkedHashMap<>();
        for (Event e : batch) {
            maxSeq.merge(e.conv(), e.seq(), Math::max);
        }
        Map<String, List<ReceivedEvent>> fresh;
        try {
            fresh = store.newEvents(batch);
        } catch (IOException e) {
            log.error("cannot read {} before storing {} pushed event(s): {}", store.file(), batch.size(), e.toString());
            return;
        }
        for (Map.Entry<String, List<ReceivedEvent>> f : fresh.entrySet()) {
            List<Long> seqs = f.getValue().stream().map(ReceivedEvent::seq).toList();
            if (!fault("beforeStore", () -> faults.beforeStore(f.getKey(), seqs))) {
                return;
            }
        }
        LocalStore.Result r;
        try {
            r = store.applyNew(fresh);
        } catch (IOException e) {
            // Nothing acked for these; the cursor stays, and a hint / gap / reconnect syncs them again.
            log.error("cannot store {} pushed event(s) in {}: {}", batch.size(), store.file(), e.toString());
            return;
        }
        if (!reportStored(r)) {
            return;
        }
        Connection c = recvConn;
        if (c == null) {
            return;
        }
        maxSeq.forEach((conv, max) -> perform(c, logic.onStored(conv, store.cursor(conv), max)));
    }

    private void onSyncReply(Connection conn, String conv, long after, ServerFrame reply, Throwable err) {
        if (conn != recvConn) {
            return; // the logic was reset by a newer connection
        }
        if (!(reply instanceof Synced s)) {
            log.info("sync of {} after {} failed: {}", conv, after, err != null ? err.toString() : reply);
            syncFailed(conn, conv);
            return;
        }
        List<Long> seqs = new ArrayList<>();
        try {
            for (Event e : s.events()) {
                if (e.seq() > store.cursor(conv) && !store.contains(conv, e.seq())) {
                    seqs.add(e.seq());
                }
            }
        } catch (IOException e) {
            log.error("cannot read {} before storing a sync page of {}: {}", store.file(), conv, e.toString());
            syncFailed(conn, conv);
            return;
        }
        if (!fault("beforeStore", () -> faults.beforeStore(conv, seqs))) {
            return;
        }
        LocalStore.Result r;
        try {
            r = store.applyPage(conv, after, s.events(), s.more(), s.head());
        } catch (IOException | IllegalArgumentException e) {
            log.error("cannot store a sync page of {} in {}: {}", conv, store.file(), e.toString());
            syncFailed(conn, conv);
            return;
        }
        if (!reportStored(r)) {
            return;
        }
        long before = r.cursorsBefore().getOrDefault(conv, 0L);
        perform(conn, logic.onSynced(conv, before, store.cursor(conv), s.more(), s.head()));
        recoveryStep(conv);
    }

    private void syncFailed(Connection conn, String conv) {
        perform(conn, logic.onSyncFailed(conv));
        if (recovering != null && recovering.contains(conv)) {
            recoveryFailed.add(conv);
        }
        recoveryStep(conv);
    }

    /** A sync loop of {@code conv} may have ended (null: none): once none the subscription found behind is left, report. */
    private void recoveryStep(String conv) {
        if (recovering == null) {
            return;
        }
        if (conv != null && !logic.syncing(conv)) {
            recovering.remove(conv);
        }
        if (recovering.isEmpty() && !catchingUp) {
            boolean recovered = recoveryFailed.isEmpty();
            List<String> behind = List.copyOf(recoveryFailed);
            recovering = null;
            listeners.fire("onRecovery", l -> l.onRecovery(recovered, behind));
        }
    }

    /** The fault point after the commit, then the listeners. False if a fault hook simulated a crash. */
    private boolean reportStored(LocalStore.Result r) {
        Map<String, Long> advanced = r.advanced();
        Set<String> convs = new LinkedHashSet<>();
        r.added().forEach(e -> convs.add(e.conv()));
        convs.addAll(advanced.keySet());
        for (String conv : convs) {
            long cur = store.cursor(conv);
            if (!fault("afterStoreBeforeAck", () -> faults.afterStoreBeforeAck(conv, cur))) {
                return false;
            }
        }
        for (ReceivedEvent e : r.added()) {
            listeners.fire("onEvent", l -> l.onEvent(e));
            if (Event.EDIT.equals(e.kind()) && !e.recalled()) {
                listeners.fire("onEdited", l -> l.onEdited(e));
            } else if (Event.RECALL.equals(e.kind())) {
                listeners.fire("onRecalled", l -> l.onRecalled(e.conv(), e.ref()));
            }
        }
        advanced.forEach((conv, cur) -> listeners.fire("onCursor", l -> l.onCursor(conv, cur)));
        for (String conv : r.added().stream().map(ReceivedEvent::conv).distinct().toList()) {
            try {
                reportUnread(conv);   // messages of others above the read state's head count
            } catch (IOException e) {
                log.warn("cannot read the unread count of {} from {}: {}", conv, store.file(), e.toString());
            }
        }
        return true;
    }

    private void perform(Connection conn, List<ReceiveLogic.Action> actions) {
        for (ReceiveLogic.Action a : actions) {
            if (conn == null || conn != recvConn || !conn.isOpen()) {
                return; // the next connection resets the logic and resubscribes
            }
            if (a instanceof ReceiveLogic.SendSync s) {
                Sync f = new Sync(rids.next(), s.conv(), s.after(), options.syncLimit());
                reply(conn, f, (r, err) -> onSyncReply(conn, s.conv(), s.after(), r, err));
            } else if (a instanceof ReceiveLogic.SendAck k) {
                // By construction k.seq() is a durable cursor; checked anyway: never ack what is not stored.
                if (k.seq() > store.cursor(k.conv())) {
                    throw new IllegalStateException("refusing to ack " + k + " above the durable cursor " + store.cursor(k.conv()));
                }
                reply(conn, new Ack(rids.next(), k.conv(), k.seq()), (r, err) -> onAckReply(conn, k, r, err));
            } else if (a instanceof ReceiveLogic.RetryAck k) {
                onReceiverAfter(retry.backoffMillis(k.failures() - 1), () -> {
                    if (conn == recvConn && conn.isOpen()) {
                        perform(conn, logic.retryAck(k.conv()));
                    }
                });
            } else if (a instanceof ReceiveLogic.ScheduleAckFlush f) {
                long delay = f.retry() ? Math.max(options.ackDelay().toMillis(), options.reconnectMin().toMillis())
                        : options.ackDelay().toMillis();
                onReceiverAfter(delay, () -> {
                    if (conn == recvConn && conn.isOpen()) {
                        perform(conn, logic.flushAcks());
                    }
                });
            }
        }
    }

    private void onAckReply(Connection conn, ReceiveLogic.SendAck k, ServerFrame r, Throwable err) {
        if (conn != recvConn) {
            return;
        }
        if (r instanceof Acked a) {
            perform(conn, logic.onAcked(k.conv(), a.delivered()));
        } else if (r instanceof ErrorFrame e) {
            log.warn("ack {} rejected: {} {}", k, e.code(), e.msg());
            List<ReceiveLogic.Action> actions = logic.onAckFailed(k.conv(), e.code());
            for (ReceiveLogic.Action a : actions) {
                if (a instanceof ReceiveLogic.AckGivenUp g) {
                    ErrorFrame last = g.internalErrors() > 0 ? RetryRule.givenUp(e, g.internalErrors()) : e;
                    log.error("ack of {} up to {} given up: {} {}", g.conv(), g.seq(), last.code(), last.msg());
                    ImErrorException cause = new ImErrorException(last);
                    listeners.fire("onAckFailed", l -> l.onAckFailed(g.conv(), g.seq(), cause));
                }
            }
            perform(conn, actions);
        } else {
            log.info("ack {} failed: {}", k, err != null ? err.toString() : r);
            perform(conn, logic.onAckFailed(k.conv(), null));
        }
    }

    /** Runs a fault hook; if it throws, simulates a process death here and returns false. */
    private boolean fault(String point, Runnable hook) {
        try {
            hook.run();
            return true;
        } catch (RuntimeException e) {
            log.warn("fault point {}: simulating a client crash ({})", point, e.toString());
            crashed = true;
            pushQueue.clear();
            sessions.abortCurrent("simulated client crash at " + point);
            closeClient.run();
            return false;
        }
    }
}
