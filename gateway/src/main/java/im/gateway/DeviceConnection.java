package im.gateway;

import im.infra.identity.DevicePrincipal;
import im.protocol.ErrorCode;
import im.protocol.ErrorFrame;
import im.protocol.FrameCodec;
import im.protocol.ServerFrame;
import im.store.directory.AuthenticatedToken;
import io.undertow.websockets.core.WebSocketCallback;
import io.undertow.websockets.core.WebSocketChannel;
import io.undertow.websockets.core.WebSockets;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;
import org.xnio.IoUtils;

/**
 * One device's WebSocket connection, and the bound on what the gateway holds for it.
 *
 * <p>Every frame written to the socket (replies and pushes alike) is counted in bytes until the
 * socket took it. Past {@code IM_CONN_BUFFER_BYTES} held, the gateway stops reading from this
 * socket (so a client that does not read cannot make it answer more requests) and drops pushes
 * to it (counted; repaired by sync and hints); reading resumes once half has drained. A request
 * whose reply can be large ({@code sync}, {@code catchup}, {@code sub}) starts only when a quarter of the budget
 * is free, with that quarter as the allowance its reply is cut to (a sync or catchup page ends early with
 * {@code more: true}, holding at least one event); otherwise it waits for the socket to drain. So
 * one connection holds at most the budget, plus what an event exceeds a quarter of the budget by
 * (per concurrent allowance, at most four), plus one push and the small replies of its in-flight
 * requests. A connection that stays over the budget for
 * {@code IM_CONN_STALL_MS} is closed (status 4008): a client that never reads costs the budget
 * for that long, then nothing.
 */
final class DeviceConnection implements CredentialWatch.Held {
    /** Close status for a connection that stayed over its byte budget (docs/protocol.md). */
    static final int SLOW_CONSUMER_STATUS = 4008;
    private static final FrameCodec CODEC = new FrameCodec();

    private final WebSocketChannel channel;
    private final int outboundLimit;
    private final long budget;
    private final long slice;
    private final Duration stall;
    private final ScheduledExecutorService timers;
    private final TokenBucket rate;
    private final AtomicInteger queued = new AtomicInteger();
    private final AtomicLong queuedBytes = new AtomicLong();
    private final AtomicInteger inflight = new AtomicInteger();
    private final OutboundMeters meters;
    /** Bytes promised to replies being built (allowances); guarded by {@code this}. */
    private long reserved;
    /** Reading is suspended because the held bytes reached the budget; written under {@code this}. */
    private volatile boolean suspended;
    private ScheduledFuture<?> stallClose;
    /** Large-reply requests waiting for room; guarded by {@code this}. */
    private final ArrayDeque<LongConsumer> waiting = new ArrayDeque<>();
    private volatile int waitingCount;
    /** The socket closed (see {@link #onClosed}); guarded by {@code this}. */
    private boolean ended;
    /** What this connection may be written, per conversation (from sub and membership notices). */
    final Visibility visibility = new Visibility();
    /** The version of this connection's interest registrations; 0 until {@code sub}. Guarded by {@code this}. */
    long interestVersion;
    /**
     * The conversations this connection's interest was published for (by {@code sub} or a join
     * notice); a repeated {@code sub} publishes only what is not in it. A re-send that a digest asked
     * for publishes them again.
     */
    final java.util.Set<String> registered = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** When a typing of this connection was last passed on, per conversation (nanoTime); guarded by itself. */
    private final java.util.Map<String, Long> typedAt = new java.util.HashMap<>();
    /**
     * The device's previous connection on this gateway, replaced by this one while it still held
     * registrations: as this connection registers a conversation, that one's registration leaves
     * the gateway's interest digest (PushHub).
     */
    volatile DeviceConnection replaced;
    /** Counted by {@link ConnectionLimits} (guarded by that object). */
    boolean admitted;
    /** Set once when the socket closed; a closed connection is never registered again. Guarded by {@code this}. */
    boolean closed;
    private volatile DevicePrincipal principal;
    /** When a frame (any, pongs included) last arrived; nanoTime. */
    volatile long lastRead = System.nanoTime();
    private volatile boolean authenticating;
    /** Why the session ended (its credentials did), or null; requests on it are then refused. */
    private volatile ErrorFrame sessionEnd;
    private ScheduledFuture<?> expiry;

    /**
     * Whether a typing in {@code conv} at {@code now} is passed on: none was within {@code interval}
     * before it (then it is the last one). Entries older than the interval are pruned once more than
     * {@code pruneAbove} conversations are held, so the map stays as small as the conversations typed
     * in lately.
     */
    boolean mayType(String conv, long now, long interval, int pruneAbove) {
        synchronized (typedAt) {
            Long last = typedAt.get(conv);
            if (last != null && now - last < interval) return false;
            typedAt.put(conv, now);
            if (typedAt.size() > pruneAbove) typedAt.values().removeIf(at -> now - at >= interval);
            return true;
        }
    }

    DeviceConnection(WebSocketChannel channel, GatewayConfig cfg, ScheduledExecutorService timers, OutboundMeters meters) {
        this.channel = channel;
        this.outboundLimit = cfg.outboundQueue();
        this.budget = cfg.connBufferBytes();
        this.slice = Math.max(1, budget / 4);
        this.stall = cfg.connStall();
        this.timers = timers;
        this.rate = new TokenBucket(cfg.rateLimitPerSecond(), System.nanoTime());
        this.meters = meters;
    }

    @Override
    public DevicePrincipal principal() {
        return principal;
    }

    /** Claims the right to authenticate; false if already authenticated or in progress. */
    synchronized boolean beginAuth() {
        if (principal != null || authenticating) return false;
        authenticating = true;
        return true;
    }

    /** The auth attempt failed: the connection may try again (if it stays open). */
    synchronized void failAuth() {
        authenticating = false;
    }

    /** Authenticated with this token: the session lasts until the token expires (or is renewed, revoked, reinstalled). */
    synchronized void endAuth(AuthenticatedToken token) {
        principal = token.principal();
        authenticating = false;
        if (token.expires() != null && !ended) {
            long ms = Math.max(0, token.expires().toEpochMilli() - System.currentTimeMillis());
            expiry = timers.schedule(() -> endSession(ErrorCode.BAD_TOKEN,
                    "the token expired at " + token.expires() + "; this connection's session is over"), ms, TimeUnit.MILLISECONDS);
        }
    }

    /** The refusal of every request on a session whose credentials ended; null while they hold. */
    ErrorFrame sessionEnded() {
        return sessionEnd;
    }

    /**
     * Ends the session: from now on every request is refused with {@code code}, which is also sent
     * (without rid) before the close with the code's status.
     */
    @Override
    public void endSession(ErrorCode code, String why) {
        endSession(new ErrorFrame(null, code, why), code.closeStatus());
    }

    /** Ends the session with this frame (refusing every request with its code) and the close status. */
    void endSession(ErrorFrame f, int closeStatus) {
        sessionEnd = f;
        replyAndClose(f, closeStatus, f.code());
    }

    /** The TCP peer's address. */
    InetAddress address() {
        return channel.getPeerAddress(InetSocketAddress.class).getAddress();
    }

    @Override
    public boolean isOpen() {
        return channel.isOpen();
    }

    boolean tryAcquireRate() {
        return rate.tryTake(System.nanoTime());
    }

    boolean tryBeginRequest(int limit) {
        if (inflight.incrementAndGet() > limit) {
            inflight.decrementAndGet();
            return false;
        }
        return true;
    }

    void endRequest() {
        inflight.decrementAndGet();
    }

    /**
     * Runs a request whose reply can be large once the held bytes leave room, with the number of
     * bytes its reply should stay within (at least one event is always answered); the request must
     * then {@link #release} that allowance after it wrote its reply. Until there is room it waits,
     * and runs when the socket drained.
     */
    void withAllowance(LongConsumer request) {
        long allowance;
        synchronized (this) {
            if (!hasRoom() || !waiting.isEmpty()) {
                waiting.add(request);
                waitingCount = waiting.size();
                suspendReading();   // nothing more is read from a client whose replies wait for it
                return;
            }
            allowance = slice;
            reserved += allowance;
        }
        request.accept(allowance);
    }

    /**
     * A large reply may start when a whole slice fits (or nothing is held at all: a reply always
     * gets one event), so that the one event a page always holds is never added to a full budget.
     */
    private boolean hasRoom() {
        long held = queuedBytes.get() + reserved;
        return held == 0 || budget - held >= slice;
    }

    /** Returns an allowance of {@link #withAllowance} (after the reply was written). */
    void release(long allowance) {
        synchronized (this) {
            reserved -= allowance;
        }
        startWaiting();
        maybeResume();
    }

    /** Starts waiting requests while there is room, in arrival order. */
    private void startWaiting() {
        if (waitingCount == 0) return;
        while (true) {
            LongConsumer next;
            long allowance;
            synchronized (this) {
                if (waiting.isEmpty() || !hasRoom() || ended) return;
                next = waiting.poll();
                waitingCount = waiting.size();
                allowance = slice;
                reserved += allowance;
            }
            next.accept(allowance);
        }
    }

    /**
     * True when the gateway has done all it will do for this connection until its client reads or
     * writes again: reading is suspended, or no request is in flight or waiting (tests).
     */
    synchronized boolean settled() {
        return suspended || (inflight.get() == 0 && waiting.isEmpty());
    }

    /** Its byte accounting, for a test's failure message. */
    synchronized String describe() {
        return "suspended=" + suspended + " heldKB=" + queuedBytes.get() / 1024 + " reserved=" + reserved
                + " waiting=" + waiting.size() + " inflight=" + inflight.get() + " open=" + channel.isOpen();
    }

    /** Writes a reply; never dropped (requests stop being read while the connection is over its budget). */
    void reply(ServerFrame frame) {
        write(CODEC.encode(frame));
    }

    /**
     * Writes a push if the socket is open and the outbound queue has room; otherwise returns false.
     * The frame's text is encoded at most once for all its recipients.
     */
    boolean push(PushText frame) {
        if (!channel.isOpen()) return false;
        if (queued.get() >= outboundLimit || queuedBytes.get() >= budget) {
            meters.droppedPushes.incrementAndGet();
            return false;
        }
        write(frame.text());
        return true;
    }

    /** The I/O thread of this connection's channel: a write made on it goes out without a hand-over. */
    Executor ioThread() {
        return channel.getIoThread();
    }

    /** A frame pushed to many devices, encoded on first use only (an event goes to every member's devices). */
    static final class PushText {
        private final ServerFrame frame;
        private String text;

        PushText(ServerFrame frame) {
            this.frame = frame;
        }

        /** Encoded by the push thread before any I/O thread writes it (a fan-out hands it over encoded). */
        String text() {
            if (text == null) text = CODEC.encode(frame);
            return text;
        }
    }

    /** Sends an error frame and then closes the connection with the given WebSocket status. */
    void replyAndClose(ServerFrame frame, int closeStatus, ErrorCode code) {
        if (!channel.isOpen()) return;
        WebSockets.sendText(CODEC.encode(frame), channel, new WebSocketCallback<Void>() {
            @Override
            public void complete(WebSocketChannel ch, Void v) {
                close(closeStatus, code.wire());
            }

            @Override
            public void onError(WebSocketChannel ch, Void v, Throwable t) {
                close(closeStatus, code.wire());
            }
        });
    }

    /** Sends a ping (clients answer with a pong, which counts as a sign of life). */
    void ping() {
        if (channel.isOpen()) WebSockets.sendPing(ByteBuffer.allocate(0), channel, null);
    }

    /** Closes the TCP connection at once (after a close frame the peer may never read). */
    void abort() {
        IoUtils.safeClose(channel);
    }

    /** Closes with a close frame, and the TCP connection a second later if the peer has not closed it by then. */
    void closeWithGrace(int status, String reason) {
        close(status, reason);
        timers.schedule(this::abort, 1, TimeUnit.SECONDS);
    }

    /**
     * Sends a close frame with {@code status}, from the channel's I/O thread: queued by another
     * thread while frames were being written, Undertow's close frame was at times not written before
     * the connection's TCP close, so the peer saw no status (1006: a replaced device took itself for
     * merely disconnected; 2 of 300 runs of the client's test against an Undertow server doing this).
     */
    void close(int status, String reason) {
        if (!channel.isOpen()) return;
        channel.getIoThread().execute(() -> {
            if (channel.isOpen()) WebSockets.sendClose(status, reason, channel, null);
        });
    }

    private void write(String text) {
        if (!channel.isOpen()) return;
        int n = text.length();
        queued.incrementAndGet();
        meters.heldBytes.add(n);
        if (queuedBytes.addAndGet(n) >= budget) suspendReading();
        WebSockets.sendText(text, channel, new Written(n));
    }

    /** Counts a frame out once, whichever of Undertow's callbacks comes (a closing channel may report a frame twice). */
    private final class Written extends AtomicBoolean implements WebSocketCallback<Void> {
        private final int bytes;

        Written(int bytes) {
            this.bytes = bytes;
        }

        @Override
        public void complete(WebSocketChannel ch, Void v) {
            if (compareAndSet(false, true)) written(bytes);
        }

        @Override
        public void onError(WebSocketChannel ch, Void v, Throwable t) {
            if (compareAndSet(false, true)) written(bytes);
        }
    }

    private void written(int n) {
        queued.decrementAndGet();
        meters.heldBytes.add(-n);
        queuedBytes.addAndGet(-n);
        startWaiting();
        maybeResume();
    }

    /** Reading resumes once half the budget has drained and no request waits for room. */
    private void maybeResume() {
        if (suspended && waitingCount == 0 && queuedBytes.get() <= budget / 2) resumeReading();
    }

    private synchronized void suspendReading() {
        if (suspended || ended) return;
        suspended = true;
        meters.suspensions.incrementAndGet();
        meters.suspendedNow.incrementAndGet();
        channel.getIoThread().execute(channel::suspendReceives);
        stallClose = timers.schedule(this::closeStalled, stall.toMillis(), TimeUnit.MILLISECONDS);
    }

    private synchronized void resumeReading() {
        if (!suspended || waitingCount > 0) return;
        suspended = false;
        meters.suspendedNow.decrementAndGet();
        if (stallClose != null) stallClose.cancel(false);
        if (!ended) channel.getIoThread().execute(channel::resumeReceives);
    }

    /** The connection stayed over its budget for {@code IM_CONN_STALL_MS}: it is closed, and what it held freed. */
    private void closeStalled() {
        synchronized (this) {
            if (!suspended || ended) return;
        }
        meters.stallCloses.incrementAndGet();
        // queued behind the held frames, so a client that never reads will not see it: the TCP close follows at once
        close(SLOW_CONSUMER_STATUS, "SLOW_CONSUMER");
        abort();
    }

    /** Called once when the socket closed: nothing waits for room on it any more. */
    void onClosed() {
        synchronized (this) {
            ended = true;
            waiting.clear();
            waitingCount = 0;
            if (suspended) {
                suspended = false;
                meters.suspendedNow.decrementAndGet();
            }
            if (stallClose != null) stallClose.cancel(false);
            if (expiry != null) expiry.cancel(false);
        }
    }
}
