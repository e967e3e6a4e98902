package im.client;

import im.protocol.Ack;
import im.protocol.Acked;
import im.protocol.Auth;
import im.protocol.Authed;
import im.protocol.ClientFrame;
import im.protocol.ErrorCode;
import im.protocol.ErrorFrame;
import im.protocol.Event;
import im.protocol.EventPush;
import im.protocol.FrameCodec;
import im.protocol.Limits;
import im.protocol.ProtocolException;
import im.protocol.Send;
import im.protocol.Sent;
import im.protocol.ServerFrame;
import im.protocol.Hint;
import im.protocol.Sub;
import im.protocol.Subbed;
import im.protocol.Sync;
import im.protocol.Synced;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Java SDK of the messaging platform: one device's connection to a gateway.
 *
 * <p>Sending is at-least-once with an idempotency key: {@link #send} writes the message to a
 * durable outbox ({@code <stateDir>/outbox.json}) <em>before</em> the first attempt and removes it
 * only when the server answered {@code sent} (committed) or rejected it terminally. Everything
 * else (timeouts, lost connections, retriable errors, a crashed process) keeps the entry, and
 * {@link #resendPending()} (automatic after every (re)connect when {@code autoReconnect} is on)
 * resends it with the same {@code cmid}, which the server deduplicates ({@code dup:true}).
 * {@code INTERNAL} is retriable but capped: an entry answered {@code INTERNAL} is retried with
 * backoff (with {@code autoReconnect}) and given up after {@link ClientOptions#maxInternalErrors()}
 * such answers. Every entry that leaves the outbox uncommitted is reported to
 * {@link ClientListener#onSendFailed}.
 *
 * <p>Receiving (with {@code autoReceive}, the default): after every (re)connect the client sends
 * {@code sub}; pushed events are stored in a durable local store ({@code <stateDir>/events.log} +
 * {@code events.state}, see {@link DurableEventStore}) keyed by (conv, seq), so duplicates are
 * no-ops; per conversation the store keeps a contiguous cursor (every visible event &le; cursor is
 * stored). Only after a batch is durable is the cursor acked, cumulatively and coalesced (one ack
 * in flight per conversation, {@code ackDelay} window). A push above cursor+1 (a gap), a
 * {@code hint}, a conversation whose head is above the cursor in {@code subbed}, or an
 * {@code acked.delivered} above the cursor starts a sync loop from the cursor (one per conversation,
 * paging while {@code more}). The decisions are in {@link ReceiveLogic}.
 *
 * <p>Threads: the JDK WebSocket reads on a client-owned pool; listener callbacks run in order on
 * one client thread; reconnects and automatic resends run on one scheduler thread; the receive
 * path (store writes with fsync, sync/ack decisions) runs on one receive thread, never on the
 * socket reader. All threads are daemons and are stopped by {@link #close()}. All public methods
 * are thread-safe.
 */
public final class ImClient implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ImClient.class);
    private static final FrameCodec CODEC = new FrameCodec();
    private static final AtomicInteger INSTANCES = new AtomicInteger();

    /** A server message assembled from WebSocket parts may not exceed this (a full synced page is ~8 MB). */
    private static final int MAX_INBOUND_CHARS = 64 * 1024 * 1024;
    /** How long disconnect waits for the close handshake before aborting the socket. */
    private static final long CLOSE_GRACE_MILLIS = 1000;

    private final ClientOptions options;
    private final Clock clock;
    private final DurableOutbox outbox;
    private final ExecutorService httpExecutor;
    private final HttpClient http;
    /** Reconnects and automatic resends (one thread, so they never overlap). */
    private final ScheduledExecutorService scheduler;
    /** Listener callbacks, in order, off the socket reader. */
    private final ExecutorService callbacks;
    private final List<ClientListener> listeners = new CopyOnWriteArrayList<>();
    private final AtomicLong ridCounter = new AtomicLong();
    /** The one outstanding attempt per cmid, so concurrent resends of an entry share it (and its verdict). */
    private final ConcurrentHashMap<String, CompletableFuture<ServerFrame>> inflight = new ConcurrentHashMap<>();
    /** Serializes connection establishment (user connect and automatic reconnect). */
    private final ReentrantLock connectLock = new ReentrantLock();

    private final Object stateLock = new Object();
    /** The authenticated connection, null when not connected. Guarded by stateLock. */
    private Connection current;
    /** Bumped by disconnect/close: a connect or reconnect that started in an older session gives up. Guarded by stateLock. */
    private long session;
    /** True after a successful connect with autoReconnect, until disconnect or a terminal close. Guarded by stateLock. */
    private boolean reconnectActive;
    /** Consecutive failed reconnects, for the backoff. Guarded by stateLock. */
    private int backoffAttempt;
    private ScheduledFuture<?> reconnectTask;
    private boolean closed;

    private volatile DeviceInfo device;

    private final DurableEventStore store;
    /** The receive path: store writes, sync/ack decisions, in order. */
    private final ScheduledExecutorService receiver;
    /** Backoff and INTERNAL cap of every retry: reconnects, outbox resends, acks, subs. */
    private final RetryRule retry;
    /** Receive thread only. */
    private final ReceiveLogic logic;
    /** Receive thread only: consecutive failed subs of the current connection, and INTERNAL answers among them. */
    private int subFailures;
    private int subInternalErrors;
    /** Receive thread only: the connection the receive state belongs to; replies of older ones are ignored. */
    private Connection recvConn;
    /** Pushed events not yet stored; drained in batches by the receive thread (one fsync per batch). */
    private final ConcurrentLinkedQueue<Event> pushQueue = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean drainScheduled = new AtomicBoolean();
    /** Set when a {@link ClientFaults} hook simulated a crash: the receive path does nothing more. */
    private volatile boolean crashed;

    private ImClient(ClientOptions options, Clock clock, DurableOutbox outbox, DurableEventStore store) {
        this.options = options;
        this.clock = clock;
        this.outbox = outbox;
        this.store = store;
        this.retry = RetryRule.of(options);
        this.logic = new ReceiveLogic(retry);
        String name = "im-client-" + INSTANCES.incrementAndGet();
        this.httpExecutor = Executors.newCachedThreadPool(daemonThreads(name + "-io"));
        this.http = HttpClient.newBuilder()
                .executor(httpExecutor)
                .connectTimeout(options.requestTimeout())
                .build();
        this.scheduler = Executors.newSingleThreadScheduledExecutor(daemonThreads(name + "-scheduler"));
        this.callbacks = Executors.newSingleThreadExecutor(daemonThreads(name + "-callbacks"));
        this.receiver = Executors.newSingleThreadScheduledExecutor(daemonThreads(name + "-receive"));
        store.cursors().forEach(logic::cursor);
    }

    /**
     * Loads the durable state in {@code stateDir} (creating the directory if missing). Does not connect.
     *
     * @throws IOException naming the file if the state file is corrupt or truncated
     */
    public static ImClient open(ClientOptions options) throws IOException {
        return open(options, Clock.systemUTC());
    }

    /** As {@link #open(ClientOptions)}, with the clock that stamps {@link PendingSend#createdAtMillis()}. */
    public static ImClient open(ClientOptions options, Clock clock) throws IOException {
        Objects.requireNonNull(options, "options");
        Objects.requireNonNull(clock, "clock");
        DurableOutbox outbox = DurableOutbox.open(options.stateDir());
        DurableEventStore store = DurableEventStore.open(options.stateDir());
        return new ImClient(options, clock, outbox, store);
    }

    public ClientOptions options() {
        return options;
    }

    // ------------------------------------------------------------------ connection

    /**
     * Connects and authenticates; returns when the server answered {@code authed}. Returns at once
     * if already connected. With {@code autoReconnect}, a connection lost afterwards is re-established
     * with exponential backoff, and the outbox is resent after every successful (re)connect.
     *
     * @throws ImErrorException if the server rejected the token (BAD_TOKEN, STALE_INSTALL: do not retry)
     * @throws SendTimeoutException if no {@code authed} arrived within the request timeout
     * @throws IOException if the WebSocket could not be opened or was lost during the handshake
     */
    public void connect() throws IOException {
        long gen;
        synchronized (stateLock) {
            if (closed) {
                throw new IllegalStateException("client is closed");
            }
            if (current != null) {
                return;
            }
            gen = session;
        }
        connectLock.lock();
        try {
            synchronized (stateLock) {
                if (current != null) {
                    return; // an automatic reconnect got there first
                }
            }
            Connection conn = handshake();
            if (!install(conn, gen)) {
                conn.abort();
                throw new ConnectionLostException("connection ended (or disconnect was called) during connect");
            }
        } finally {
            connectLock.unlock();
        }
    }

    public boolean isConnected() {
        synchronized (stateLock) {
            return current != null;
        }
    }

    /** User, device and install epoch from the last {@code authed}; null before the first successful connect. */
    public DeviceInfo device() {
        return device;
    }

    /** Ends the current session: no more reconnects, and the connection (returned, may be null) is detached. */
    private Connection detachCurrent() {
        synchronized (stateLock) {
            session++;
            reconnectActive = false;
            if (reconnectTask != null) {
                reconnectTask.cancel(false);
                reconnectTask = null;
            }
            Connection old = current;
            current = null;
            return old;
        }
    }

    /** Closes the socket; no automatic reconnect until {@link #connect()} is called again. The durable state stays. */
    public void disconnect() {
        Connection old = detachCurrent();
        if (old != null) {
            old.shutdown(new ConnectionLostException("disconnected by the client"));
            old.closeGracefully();
            log.info("disconnected from {}", options.uri());
            fire("onDisconnected", l -> l.onDisconnected(null));
        }
    }

    /** Disconnects and stops the client's threads. Idempotent. */
    @Override
    public void close() {
        synchronized (stateLock) {
            if (closed) {
                return;
            }
            closed = true;
        }
        disconnect();
        scheduler.shutdownNow();
        receiver.shutdownNow();
        callbacks.shutdown(); // queued callbacks (e.g. the final onDisconnected) still run on the daemon thread
        httpExecutor.shutdownNow();
    }

    private Connection handshake() throws IOException {
        Duration timeout = options.requestTimeout();
        Connection conn = new Connection();
        CompletableFuture<WebSocket> opening = http.newWebSocketBuilder()
                .connectTimeout(timeout)
                .buildAsync(options.uri(), conn);
        try {
            conn.ws = opening.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            opening.thenAccept(WebSocket::abort); // if it opens after all, nobody will use it
            throw new ConnectionLostException("cannot connect to " + options.uri() + ": no handshake within " + timeout);
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            throw new ConnectionLostException("cannot connect to " + options.uri() + ": " + c, c);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            opening.thenAccept(WebSocket::abort);
            throw new InterruptedIOException("interrupted while connecting to " + options.uri());
        }
        Auth auth = new Auth(nextRid(), options.token());
        ServerFrame reply;
        try {
            reply = await(submit(conn, auth, false), timeout, "auth");
        } catch (IOException e) {
            conn.pending.remove(auth.rid());
            conn.abort();
            throw e;
        }
        if (reply instanceof Authed a) {
            conn.device = new DeviceInfo(a.user(), a.device(), a.epoch());
            return conn;
        }
        conn.abort();
        if (reply instanceof ErrorFrame err) {
            throw new ImErrorException(err);
        }
        throw new IOException("unexpected reply to auth: " + reply);
    }

    /** Makes {@code conn} the current connection unless the session changed or it already died. */
    private boolean install(Connection conn, long gen) {
        synchronized (stateLock) {
            if (closed || gen != session || !conn.isOpen()) {
                return false;
            }
            current = conn;
            reconnectActive = options.autoReconnect();
            backoffAttempt = 0;
            device = conn.device;
        }
        log.info("connected to {} as {}", options.uri(), conn.device);
        fire("onConnected", ClientListener::onConnected);
        if (options.autoReceive()) {
            onReceiver(() -> startReceive(conn));
        }
        if (options.autoReconnect()) {
            try {
                scheduler.execute(this::autoResend);
            } catch (RejectedExecutionException e) {
                log.debug("client closed; no automatic resend");
            }
        }
        return true;
    }

    private void onConnectionLost(Connection conn, IOException cause) {
        if (!conn.shutdown(cause)) {
            return; // already handled
        }
        boolean reconnect;
        long gen;
        synchronized (stateLock) {
            if (current != conn) {
                return; // a handshake that failed, or a connection the client already dropped
            }
            current = null;
            if (isTerminal(cause)) {
                reconnectActive = false;
            }
            reconnect = reconnectActive && !closed;
            gen = session;
        }
        if (isTerminal(cause)) {
            log.error("server ended the session terminally ({}); not reconnecting", cause.getMessage());
        } else {
            log.info("connection to {} lost: {}{}", options.uri(), cause.getMessage(), reconnect ? "; reconnecting" : "");
        }
        fire("onDisconnected", l -> l.onDisconnected(cause));
        if (reconnect) {
            scheduleReconnect(gen);
        }
    }

    private static boolean isTerminal(Throwable cause) {
        return cause instanceof ImErrorException e && e.code().closesConnection();
    }

    private void scheduleReconnect(long gen) {
        synchronized (stateLock) {
            if (closed || gen != session || !reconnectActive || current != null) {
                return;
            }
            long delay = retry.backoffMillis(backoffAttempt++);
            log.debug("reconnecting to {} in {} ms", options.uri(), delay);
            reconnectTask = scheduler.schedule(() -> reconnect(gen), delay, TimeUnit.MILLISECONDS);
        }
    }

    private void reconnect(long gen) {
        connectLock.lock();
        try {
            synchronized (stateLock) {
                if (closed || gen != session || !reconnectActive || current != null) {
                    return;
                }
            }
            Connection conn;
            try {
                conn = handshake();
            } catch (ImErrorException e) {
                if (e.code().closesConnection()) {
                    synchronized (stateLock) {
                        reconnectActive = false;
                    }
                    log.error("reconnect rejected by the server ({}); not reconnecting", e.getMessage());
                    fire("onDisconnected", l -> l.onDisconnected(e));
                    return;
                }
                log.info("reconnect to {} failed: {}", options.uri(), e.getMessage());
                scheduleReconnect(gen);
                return;
            } catch (InterruptedIOException e) {
                return; // the client is closing
            } catch (IOException e) {
                log.info("reconnect to {} failed: {}", options.uri(), e.getMessage());
                scheduleReconnect(gen);
                return;
            }
            if (!install(conn, gen)) {
                conn.abort();
                scheduleReconnect(gen);
            }
        } finally {
            connectLock.unlock();
        }
    }

    private void autoResend() {
        try {
            List<SentAck> acks = resendPending();
            if (!acks.isEmpty()) {
                log.info("resent {} pending message(s) after connect", acks.size());
            }
        } catch (IOException e) {
            // Entries stay in the outbox; the next connect or an explicit resendPending() retries them.
            log.info("automatic resend stopped: {}", e.getMessage());
        }
    }

    // ------------------------------------------------------------------ sending

    /** {@link #send(String, String, Duration)} with the request timeout. */
    public SentAck send(String conv, String body) throws IOException {
        return send(conv, body, options.requestTimeout());
    }

    /**
     * Sends a message at least once. The outbox entry (new cmid) is durable before the first attempt.
     *
     * @return the server's confirmation: the message is committed
     * @throws ImErrorException the server (or local validation, before anything is written) rejected it;
     *         the entry is dropped when the code is terminal for the message (and reported to
     *         {@link ClientListener#onSendFailed}), kept when retriable; after {@code INTERNAL} it is
     *         retried with backoff and given up after {@link ClientOptions#maxInternalErrors()} answers
     * @throws SendTimeoutException no reply in time; the entry is kept
     * @throws ConnectionLostException not connected, or the connection ended; the entry is kept
     */
    public SentAck send(String conv, String body, Duration timeout) throws IOException {
        Objects.requireNonNull(timeout, "timeout");
        PendingSend entry = newEntry(conv, body);
        outbox.add(entry);
        return deliver(entry, timeout);
    }

    /** Only writes a durable outbox entry (no send); returns its cmid. For tests and crash simulation. */
    public String enqueue(String conv, String body) throws IOException {
        PendingSend entry = newEntry(conv, body);
        outbox.add(entry);
        return entry.cmid();
    }

    /**
     * Resends every pending entry in insertion order with its own cmid, one at a time, each waiting
     * up to the request timeout; the same keep/remove rules as {@link #send} apply. An entry already
     * being sent (e.g. by the automatic resend) is not sent twice: this call waits for that attempt.
     * Stops early if the connection is lost.
     *
     * @return the acks of the entries confirmed by this call ({@link SentAck#dup()} tells resends of committed messages)
     * @throws ConnectionLostException if not connected when called
     */
    public List<SentAck> resendPending() throws IOException {
        if (!isConnected()) {
            throw new ConnectionLostException("not connected");
        }
        List<PendingSend> entries = outbox.snapshot();
        List<SentAck> acks = new ArrayList<>();
        for (PendingSend e : entries) {
            if (!outbox.contains(e.cmid())) {
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

    /** A snapshot of the outbox in insertion order. */
    public List<PendingSend> pending() {
        return outbox.snapshot();
    }

    private PendingSend newEntry(String conv, String body) throws ImErrorException {
        Objects.requireNonNull(conv, "conv");
        Objects.requireNonNull(body, "body");
        // Reject locally what the server would reject terminally, before anything is written.
        if (!Limits.isValidId(conv)) {
            throw new ImErrorException(ErrorCode.BAD_FIELD, null, "conv: must be a string matching " + Limits.ID_PATTERN);
        }
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
        return new PendingSend(UUID.randomUUID().toString(), conv, body, clock.millis());
    }

    /** One attempt for an outbox entry; the keep/remove decision for an error was made once per attempt ({@link #judge}). */
    private SentAck deliver(PendingSend entry, Duration timeout) throws IOException {
        ServerFrame reply = attempt(entry, timeout);
        if (reply instanceof Sent s) {
            outbox.remove(entry.cmid());
            return new SentAck(s.conv(), entry.cmid(), s.seq(), s.mid(), s.dup(), s.epoch());
        }
        if (reply instanceof ErrorFrame err) {
            throw new ImErrorException(err);
        }
        throw new IOException("unexpected reply to send of cmid " + entry.cmid() + ": " + reply);
    }

    /**
     * What an error reply means for the entry, decided once per attempt however many callers wait
     * for it: a terminal code drops the entry; {@code INTERNAL} is counted durably, and the entry
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
            PendingSend counted = outbox.recordInternalError(cmid);
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
            log.warn("cannot update outbox entry {} in {} after {}: {}", cmid, outbox.file(), err.code(), e.toString());
        }
        return err;
    }

    /** Removes the entry for good and tells the listeners (once: only the removal that found it reports). */
    private void giveUp(String cmid, ErrorFrame err) throws IOException {
        PendingSend entry = outbox.get(cmid);
        if (entry == null || !outbox.remove(cmid)) {
            return;
        }
        log.warn("gave up outbox entry {}: {} {}", cmid, err.code(), err.msg());
        ImErrorException cause = new ImErrorException(err);
        fire("onSendFailed", l -> l.onSendFailed(entry, cause));
    }

    /**
     * After the {@code n}th INTERNAL, resends the entry once the reconnect backoff for attempt
     * {@code n - 1} has passed, if still pending and connected (else the next connect resends it).
     * Only with {@code autoReconnect}, the switch for resends nobody asked for.
     */
    private void scheduleInternalRetry(String cmid, int n) {
        if (!options.autoReconnect()) {
            return;
        }
        long delay = retry.backoffMillis(n - 1);
        try {
            scheduler.schedule(() -> {
                PendingSend entry = outbox.get(cmid);
                if (entry == null || !isConnected()) {
                    return;
                }
                try {
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
        Connection conn = currentConnection();
        String cmid = entry.cmid();
        CompletableFuture<ServerFrame> fut = inflight.compute(cmid, (k, old) -> old != null && !old.isDone()
                ? old
                // Judged off the socket reader (the outbox is fsynced) and off the scheduler (which may be waiting here).
                : submit(conn, new Send(nextRid(), entry.conv(), cmid, entry.body()), true)
                        .thenApplyAsync(r -> r instanceof ErrorFrame err ? judge(entry, err) : r, httpExecutor));
        fut.whenComplete((r, e) -> inflight.remove(cmid, fut));
        try {
            return await(fut, timeout, "send of cmid " + cmid);
        } catch (SendTimeoutException e) {
            // The next attempt sends afresh; a late reply to this one still confirms the entry.
            inflight.remove(cmid, fut);
            throw e;
        }
    }

    // ------------------------------------------------------------------ generic requests

    /**
     * Sends {@code frame} and returns the reply with the same rid, including an {@link ErrorFrame}
     * (returned, not thrown). Used for {@code ack}, {@code sub} and {@code sync}. The caller assigns
     * the rid ({@link #nextRid()}).
     *
     * @throws SendTimeoutException no reply within {@code timeout} (a late reply goes to {@link ClientListener#onPush})
     * @throws ConnectionLostException not connected, or the connection ended before the reply
     * @throws IllegalArgumentException if a request with the same rid is still pending
     */
    public ServerFrame request(ClientFrame frame, Duration timeout) throws IOException {
        Objects.requireNonNull(frame, "frame");
        Objects.requireNonNull(timeout, "timeout");
        Connection conn = currentConnection();
        CompletableFuture<ServerFrame> fut = submit(conn, frame, false);
        try {
            return await(fut, timeout, "request " + frame.rid());
        } catch (SendTimeoutException e) {
            conn.pending.remove(frame.rid());
            throw e;
        }
    }

    /** A request id unique within this client instance. */
    public String nextRid() {
        return "r" + ridCounter.incrementAndGet();
    }

    public void addListener(ClientListener l) {
        listeners.add(Objects.requireNonNull(l, "listener"));
    }

    private Connection currentConnection() throws ConnectionLostException {
        synchronized (stateLock) {
            if (current == null) {
                throw new ConnectionLostException(closed ? "client is closed" : "not connected");
            }
            return current;
        }
    }

    /**
     * At most this many requests are outstanding on one connection; more wait here, in order,
     * instead of being refused by the gateway (its default in-flight limit, IM_MAX_INFLIGHT, is 64).
     * A burst of acks and syncs after a reconnect in many conversations stays within it.
     */
    static final int MAX_OUTSTANDING = 32;

    /** Writes the request now if the connection's window has room, else when a reply frees it. */
    private CompletableFuture<ServerFrame> submit(Connection conn, ClientFrame frame, boolean outboxEntry) {
        CompletableFuture<ServerFrame> fut = new CompletableFuture<>();
        Runnable write = () -> submitNow(conn, frame, outboxEntry, fut);
        boolean now;
        synchronized (conn.waiting) {
            now = conn.outstanding < MAX_OUTSTANDING;
            if (now) conn.outstanding++;
            else conn.waiting.add(write);
        }
        // The slot is freed by the reply, or after the request timeout if no reply ever comes
        // (a lost reply must not shrink the window for the rest of the connection's life).
        java.util.concurrent.atomic.AtomicBoolean freed = new java.util.concurrent.atomic.AtomicBoolean();
        fut.copy().orTimeout(options.requestTimeout().toMillis(), TimeUnit.MILLISECONDS).whenComplete((r, e) -> {
            if (!freed.compareAndSet(false, true)) return;
            Runnable next;
            synchronized (conn.waiting) {
                next = conn.waiting.poll();
                if (next == null) conn.outstanding--;
            }
            if (next != null) next.run();
        });
        if (now) write.run();
        return fut;
    }

    /** Registers the reply slot for {@code frame}'s rid, then writes the frame. Never throws: failures complete the future. */
    private void submitNow(Connection conn, ClientFrame frame, boolean outboxEntry, CompletableFuture<ServerFrame> fut) {
        String rid = frame.rid();
        Send send = frame instanceof Send s ? s : null;
        if (conn.pending.putIfAbsent(rid, new PendingRequest(fut, send, outboxEntry)) != null) {
            fut.completeExceptionally(new IllegalArgumentException("a request with rid " + rid + " is already pending"));
            return;
        }
        // Checked after registering: either shutdown() sees the slot or this sees the closed flag.
        if (!conn.isOpen()) {
            conn.pending.remove(rid);
            fut.completeExceptionally(new ConnectionLostException("not connected"));
            return;
        }
        conn.sendText(CODEC.encode(frame)).whenComplete((v, e) -> {
            if (e != null) {
                conn.pending.remove(rid);
                fut.completeExceptionally(new ConnectionLostException("cannot write frame: " + e, e));
                onConnectionLost(conn, new ConnectionLostException("write failed: " + e, e));
                conn.abortSocket();
            }
        });
    }

    private static <T> T await(CompletableFuture<T> fut, Duration timeout, String what) throws IOException {
        try {
            return fut.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new SendTimeoutException("no reply to " + what + " within " + timeout.toMillis() + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while waiting for the reply to " + what);
        } catch (ExecutionException e) {
            // Rethrow as a new exception of the same type so the stack trace shows the caller.
            Throwable c = e.getCause();
            if (c instanceof ImErrorException ie) {
                throw new ImErrorException(ie.frame());
            }
            if (c instanceof ConnectionLostException cl) {
                throw new ConnectionLostException(cl.getMessage() + " (waiting for the reply to " + what + ")", cl);
            }
            if (c instanceof RuntimeException re) {
                throw re;
            }
            throw new IOException("request failed: " + what, c);
        }
    }

    // ------------------------------------------------------------------ receive side (public)

    /** The durable contiguous cursor of {@code conv}: every visible event with seq &le; it is stored locally (0 if unknown). */
    public long cursor(String conv) {
        return store.cursor(Objects.requireNonNull(conv, "conv"));
    }

    /** The durable cursors of every conversation this device has stored anything for, by conversation id. */
    public Map<String, Long> cursors() {
        return store.cursors();
    }

    /** The stored events of {@code conv} in seq order (including any held above the cursor, waiting for a gap to close). */
    public List<ReceivedEvent> events(String conv) {
        return store.events(Objects.requireNonNull(conv, "conv"));
    }

    /**
     * Starts a sync loop of {@code conv} from the local cursor (or reruns it once when one is running),
     * then acks. Asynchronous: watch {@link #cursor}, {@link ClientListener#onCursor}. For tests and repair.
     *
     * @throws ConnectionLostException if not connected
     * @throws IllegalStateException if {@code autoReceive} is off
     */
    public void syncNow(String conv) throws ConnectionLostException {
        Objects.requireNonNull(conv, "conv");
        if (!options.autoReceive()) {
            throw new IllegalStateException("syncNow needs autoReceive");
        }
        Connection conn = currentConnection();
        onReceiver(() -> {
            if (conn == recvConn) {
                perform(conn, logic.syncNow(conv));
            }
        });
    }

    // ------------------------------------------------------------------ receive side (receive thread)

    private void onReceiver(Runnable task) {
        try {
            receiver.execute(() -> {
                if (crashed) {
                    return;
                }
                try {
                    task.run();
                } catch (RuntimeException e) {
                    log.error("receive task failed", e);
                }
            });
        } catch (RejectedExecutionException e) {
            log.debug("client closed; receive task dropped");
        }
    }

    /** Runs {@code task} on the receive thread after {@code delayMillis}. */
    private void onReceiverAfter(long delayMillis, Runnable task) {
        try {
            receiver.schedule(() -> onReceiver(task), delayMillis, TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            log.debug("client closed; delayed receive task dropped");
        }
    }

    /** After auth: reset the per-connection receive state and subscribe. */
    private void startReceive(Connection conn) {
        recvConn = conn;
        logic.connected();
        store.cursors().forEach(logic::cursor);
        subFailures = 0;
        subInternalErrors = 0;
        Sub sub = new Sub(nextRid());
        reply(conn, sub, (r, err) -> onSubReply(conn, r, err));
    }

    private void onSubReply(Connection conn, ServerFrame r, Throwable err) {
        if (conn != recvConn) {
            return;
        }
        if (r instanceof Subbed s) {
            log.debug("subscribed: {} conversation(s)", s.convs().size());
            perform(conn, logic.onSubbed(s.convs()));
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
                reply(conn, new Sub(nextRid()), (r2, err2) -> onSubReply(conn, r2, err2));
            }
        });
    }

    private void subscribeFailed(ErrorFrame err) {
        log.error("sub given up on this connection: {} {}", err.code(), err.msg());
        ImErrorException cause = new ImErrorException(err);
        fire("onSubscribeFailed", l -> l.onSubscribeFailed(cause));
    }

    /** Sends a request whose reply (or failure, timeout) is handled on the receive thread. */
    private void reply(Connection conn, ClientFrame frame, java.util.function.BiConsumer<ServerFrame, Throwable> then) {
        submit(conn, frame, false)
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
        if (batch.isEmpty()) {
            return;
        }
        Map<String, Long> maxSeq = new LinkedHashMap<>();
        for (Event e : batch) {
            maxSeq.merge(e.conv(), e.seq(), Math::max);
        }
        for (Map.Entry<String, List<ReceivedEvent>> f : store.newEvents(batch).entrySet()) {
            List<Long> seqs = f.getValue().stream().map(ReceivedEvent::seq).toList();
            if (!fault("beforeStore", () -> options.faults().beforeStore(f.getKey(), seqs))) {
                return;
            }
        }
        DurableEventStore.Result r;
        try {
            r = store.applyPushes(batch);
        } catch (IOException e) {
            // Nothing acked for these; the cursor stays, and a hint / gap / reconnect syncs them again.
            log.error("cannot store {} pushed event(s) in {}: {}", batch.size(), store.logFile(), e.toString());
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
            perform(conn, logic.onSyncFailed(conv));
            return;
        }
        List<Long> seqs = s.events().stream().filter(e -> !store.contains(conv, e.seq()) && e.seq() > store.cursor(conv))
                .map(Event::seq).toList();
        if (!fault("beforeStore", () -> options.faults().beforeStore(conv, seqs))) {
            return;
        }
        DurableEventStore.Result r;
        try {
            r = store.applyPage(conv, after, s.events(), s.more(), s.head());
        } catch (IOException | IllegalArgumentException e) {
            log.error("cannot store a sync page of {} in {}: {}", conv, store.logFile(), e.toString());
            perform(conn, logic.onSyncFailed(conv));
            return;
        }
        if (!reportStored(r)) {
            return;
        }
        long before = r.cursorsBefore().getOrDefault(conv, 0L);
        perform(conn, logic.onSynced(conv, before, store.cursor(conv), s.more(), s.head()));
    }

    /** The fault point after the commit, then the listeners. False if a fault hook simulated a crash. */
    private boolean reportStored(DurableEventStore.Result r) {
        Map<String, Long> advanced = r.advanced();
        java.util.Set<String> convs = new java.util.LinkedHashSet<>();
        r.added().forEach(e -> convs.add(e.conv()));
        convs.addAll(advanced.keySet());
        for (String conv : convs) {
            long cur = store.cursor(conv);
            if (!fault("afterStoreBeforeAck", () -> options.faults().afterStoreBeforeAck(conv, cur))) {
                return false;
            }
        }
        for (ReceivedEvent e : r.added()) {
            fire("onEvent", l -> l.onEvent(e));
        }
        advanced.forEach((conv, cur) -> fire("onCursor", l -> l.onCursor(conv, cur)));
        return true;
    }

    private void perform(Connection conn, List<ReceiveLogic.Action> actions) {
        for (ReceiveLogic.Action a : actions) {
            if (conn == null || conn != recvConn || !conn.isOpen()) {
                return; // the next connection resets the logic and resubscribes
            }
            if (a instanceof ReceiveLogic.SendSync s) {
                Sync f = new Sync(nextRid(), s.conv(), s.after(), options.syncLimit());
                reply(conn, f, (r, err) -> onSyncReply(conn, s.conv(), s.after(), r, err));
            } else if (a instanceof ReceiveLogic.SendAck k) {
                // By construction k.seq() is a durable cursor; checked anyway: never ack what is not stored.
                if (k.seq() > store.cursor(k.conv())) {
                    throw new IllegalStateException("refusing to ack " + k + " above the durable cursor " + store.cursor(k.conv()));
                }
                reply(conn, new Ack(nextRid(), k.conv(), k.seq()), (r, err) -> onAckReply(conn, k, r, err));
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
                    fire("onAckFailed", l -> l.onAckFailed(g.conv(), g.seq(), cause));
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
            Connection old = detachCurrent();
            if (old != null) {
                old.shutdown(new ConnectionLostException("simulated client crash at " + point));
                old.abortSocket();
            }
            close();
            return false;
        }
    }

    // ------------------------------------------------------------------ receiving

    private void dispatch(Connection conn, String text) {
        ServerFrame frame;
        try {
            frame = CODEC.decodeServer(text);
        } catch (ProtocolException e) {
            log.warn("ignoring a server frame that does not parse ({}): {}", e.code(), e.getMessage());
            return;
        }
        String rid = replyRid(frame);
        PendingRequest p = rid == null ? null : conn.pending.remove(rid);
        if (p == null) {
            if (options.autoReceive()) {
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
            fire("onPush", l -> l.onPush(frame));
            return;
        }
        if (frame instanceof Sent s && p.send() != null) {
            SentAck ack = new SentAck(s.conv(), p.send().cmid(), s.seq(), s.mid(), s.dup(), s.epoch());
            fire("onSent", l -> l.onSent(ack), p.outboxEntry() ? () -> removeConfirmed(ack.cmid()) : null);
        }
        p.future().complete(frame);
    }

    /** A {@code sent} whose waiter may have given up: the message is committed, so the entry goes. */
    private void removeConfirmed(String cmid) {
        try {
            outbox.remove(cmid);
        } catch (IOException e) {
            // The entry stays pending; its next resend gets dup=true and removes it then.
            log.warn("cannot remove confirmed cmid {} from {}: {}", cmid, outbox.file(), e.toString());
        }
    }

    private static String replyRid(ServerFrame f) {
        if (f instanceof Authed a) {
            return a.rid();
        } else if (f instanceof Sent s) {
            return s.rid();
        } else if (f instanceof Acked a) {
            return a.rid();
        } else if (f instanceof Subbed s) {
            return s.rid();
        } else if (f instanceof Synced s) {
            return s.rid();
        } else if (f instanceof ErrorFrame e) {
            return e.rid();
        }
        return null; // event, hint
    }

    private static IOException causeForClose(int status, String reason) {
        for (ErrorCode code : ErrorCode.values()) {
            if (code.closesConnection() && code.closeStatus() == status) {
                return new ImErrorException(code, null, "server closed the connection with status " + status);
            }
        }
        return new ConnectionLostException("server closed the connection: " + status
                + (reason == null || reason.isEmpty() ? "" : " " + reason));
    }

    private void fire(String what, Consumer<ClientListener> call) {
        fire(what, call, null);
    }

    private void fire(String what, Consumer<ClientListener> call, Runnable before) {
        try {
            callbacks.execute(() -> {
                if (before != null) {
                    before.run();
                }
                for (ClientListener l : listeners) {
                    try {
                        call.accept(l);
                    } catch (RuntimeException e) {
                        // A faulty listener must not stop the callbacks of the others or of later events.
                        log.warn("listener {} threw in {}", l, what, e);
                    }
                }
            });
        } catch (RejectedExecutionException e) {
            log.debug("client closed; {} not delivered", what);
        }
    }

    private static ThreadFactory daemonThreads(String prefix) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, prefix + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }

    private record PendingRequest(CompletableFuture<ServerFrame> future, Send send, boolean outboxEntry) {
    }

    /** One WebSocket: its reader (the JDK calls these methods one at a time), its writer chain and its pending requests. */
    private final class Connection implements WebSocket.Listener {
        volatile WebSocket ws;
        volatile DeviceInfo device;
        /** Replies awaited on this socket, by rid (a reply never arrives on another socket). */
        final ConcurrentHashMap<String, PendingRequest> pending = new ConcurrentHashMap<>();
        /** Requests written and not yet answered, and those waiting for room; guarded by itself. */
        final java.util.ArrayDeque<Runnable> waiting = new java.util.ArrayDeque<>();
        int outstanding;
        private final AtomicBoolean open = new AtomicBoolean(true);
        private final CompletableFuture<Void> inputClosed = new CompletableFuture<>();
        private final StringBuilder inbound = new StringBuilder();
        private final Object sendLock = new Object();
        /** The JDK WebSocket allows one outstanding sendText; frames are chained. Guarded by sendLock. */
        private CompletableFuture<Void> sendChain = CompletableFuture.completedFuture(null);

        boolean isOpen() {
            return open.get();
        }

        CompletableFuture<Void> sendText(String text) {
            synchronized (sendLock) {
                WebSocket w = ws;
                CompletableFuture<Void> next = sendChain
                        .handle((v, e) -> (Void) null)
                        .thenCompose(v -> w.sendText(text, true))
                        .thenApply(x -> (Void) null);
                sendChain = next;
                return next;
            }
        }

        /** Marks the connection closed and fails every pending request; true only for the first call. */
        boolean shutdown(IOException cause) {
            if (!open.compareAndSet(true, false)) {
                return false;
            }
            for (String rid : pending.keySet()) {
                PendingRequest p = pending.remove(rid);
                if (p != null) {
                    p.future().completeExceptionally(cause);
                }
            }
            return true;
        }

        void abortSocket() {
            WebSocket w = ws;
            if (w != null) {
                w.abort();
            }
            inputClosed.complete(null);
        }

        void abort() {
            onConnectionLost(this, new ConnectionLostException("connection aborted by the client"));
            abortSocket();
        }

        /** Close handshake with a short grace period, then abort. */
        void closeGracefully() {
            WebSocket w = ws;
            if (w == null) {
                return;
            }
            try {
                w.sendClose(WebSocket.NORMAL_CLOSURE, "").get(CLOSE_GRACE_MILLIS, TimeUnit.MILLISECONDS);
                inputClosed.get(CLOSE_GRACE_MILLIS, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (ExecutionException | TimeoutException e) {
                log.debug("close handshake incomplete: {}", e.toString());
            } finally {
                w.abort();
            }
        }

        @Override
        public void onOpen(WebSocket webSocket) {
            ws = webSocket;
            webSocket.request(1);
        }

        @Override
        public CompletionStage<?> onText(WebSocket webSocket, CharSequence data, boolean last) {
            if (inbound.length() + data.length() > MAX_INBOUND_CHARS) {
                inbound.setLength(0);
                onConnectionLost(this, new ConnectionLostException("server message exceeds " + MAX_INBOUND_CHARS + " chars"));
                abortSocket();
                return null;
            }
            inbound.append(data);
            if (last) {
                String text = inbound.toString();
                inbound.setLength(0);
                dispatch(this, text);
            }
            webSocket.request(1);
            return null;
        }

        @Override
        public CompletionStage<?> onBinary(WebSocket webSocket, ByteBuffer data, boolean last) {
            log.warn("ignoring a binary WebSocket frame from the server");
            webSocket.request(1);
            return null;
        }

        @Override
        public CompletionStage<?> onClose(WebSocket webSocket, int statusCode, String reason) {
            inputClosed.complete(null);
            onConnectionLost(this, causeForClose(statusCode, reason));
            return null;
        }

        @Override
        public void onError(WebSocket webSocket, Throwable error) {
            inputClosed.complete(null);
            onConnectionLost(this, new ConnectionLostException("connection failed: " + error, error));
        }
    }
}
