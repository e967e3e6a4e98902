package im.gateway;

import im.infra.identity.DevicePrincipal;
import im.protocol.ErrorCode;
import im.protocol.FrameCodec;
import im.protocol.ServerFrame;
import io.undertow.websockets.core.WebSocketCallback;
import io.undertow.websockets.core.WebSocketChannel;
import io.undertow.websockets.core.WebSockets;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One device's WebSocket connection. Replies to requests are always written (their number is
 * bounded by the in-flight limit); pushes go through a bounded outbound queue and are dropped
 * (and counted) when it is full, so a slow client never blocks anyone and never grows the heap.
 */
final class DeviceConnection {
    private static final FrameCodec CODEC = new FrameCodec();

    private final WebSocketChannel channel;
    private final int outboundLimit;
    private final TokenBucket rate;
    private final AtomicInteger queued = new AtomicInteger();
    private final AtomicInteger inflight = new AtomicInteger();
    private final AtomicLong droppedPushes;
    /** What this connection may be written, per conversation (from sub and membership notices). */
    final Visibility visibility = new Visibility();
    /** The version of this connection's interest registrations; 0 until {@code sub}. Guarded by {@code this}. */
    long interestVersion;
    /**
     * The conversations this connection's interest was published for (by {@code sub} or a join
     * notice); a repeated {@code sub} publishes only what is not in it. Renewals republish all.
     */
    final java.util.Set<String> registered = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** Set once when the socket closed; a closed connection is never registered again. Guarded by {@code this}. */
    boolean closed;
    private volatile DevicePrincipal principal;
    private volatile boolean authenticating;

    DeviceConnection(WebSocketChannel channel, int outboundLimit, int ratePerSecond, AtomicLong droppedPushes) {
        this.channel = channel;
        this.outboundLimit = outboundLimit;
        this.rate = new TokenBucket(ratePerSecond, System.nanoTime());
        this.droppedPushes = droppedPushes;
    }

    DevicePrincipal principal() {
        return principal;
    }

    /** Claims the right to authenticate; false if already authenticated or in progress. */
    synchronized boolean beginAuth() {
        if (principal != null || authenticating) return false;
        authenticating = true;
        return true;
    }

    synchronized void endAuth(DevicePrincipal p) {
        principal = p;
        authenticating = false;
    }

    boolean isOpen() {
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

    /** Writes a reply; never dropped by the queue bound. */
    void reply(ServerFrame frame) {
        write(CODEC.encode(frame));
    }

    /**
     * Writes a push if the socket is open and the outbound queue has room; otherwise returns false.
     * The frame's text is encoded at most once for all its recipients.
     */
    boolean push(PushText frame) {
        if (!channel.isOpen()) return false;
        if (queued.get() >= outboundLimit) {
            droppedPushes.incrementAndGet();
            return false;
        }
        write(frame.text());
        return true;
    }

    /** A frame pushed to many devices, encoded on first use only (an event goes to every member's devices). */
    static final class PushText {
        private final ServerFrame frame;
        private String text;

        PushText(ServerFrame frame) {
            this.frame = frame;
        }

        /** Single-threaded use: the push thread. */
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

    void close(int status, String reason) {
        if (!channel.isOpen()) return;
        WebSockets.sendClose(status, reason, channel, null);
    }

    private void write(String text) {
        if (!channel.isOpen()) return;
        queued.incrementAndGet();
        WebSockets.sendText(text, channel, new WebSocketCallback<Void>() {
            @Override
            public void complete(WebSocketChannel ch, Void v) {
                queued.decrementAndGet();
            }

            @Override
            public void onError(WebSocketChannel ch, Void v, Throwable t) {
                queued.decrementAndGet();
            }
        });
    }
}
