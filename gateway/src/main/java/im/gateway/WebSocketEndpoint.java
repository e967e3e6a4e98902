package im.gateway;

import im.protocol.ErrorCode;
import im.protocol.ErrorFrame;
import im.protocol.Limits;
import io.undertow.websockets.WebSocketConnectionCallback;
import io.undertow.websockets.core.AbstractReceiveListener;
import io.undertow.websockets.core.BufferedBinaryMessage;
import io.undertow.websockets.core.BufferedTextMessage;
import io.undertow.websockets.core.WebSocketChannel;
import io.undertow.websockets.spi.WebSocketHttpExchange;
import java.io.IOException;
import java.net.InetAddress;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code /ws} endpoint: one {@link DeviceConnection} per socket. Text frames go to the
 * dispatcher; binary frames get {@code BINARY_UNSUPPORTED} and the connection stays open.
 * Frames over {@link Limits#MAX_FRAME_BYTES} are answered by the codec with FRAME_TOO_LARGE;
 * frames over {@link #HARD_FRAME_LIMIT} are not buffered at all and close the connection (1009).
 */
final class WebSocketEndpoint implements WebSocketConnectionCallback {
    /** Beyond this a frame is not even buffered: the socket is closed with status 1009. */
    static final long HARD_FRAME_LIMIT = 4L * Limits.MAX_FRAME_BYTES;

    private static final Logger log = LoggerFactory.getLogger(WebSocketEndpoint.class);

    private final FrameDispatcher dispatcher;
    private final GatewayConfig cfg;
    private final ScheduledExecutorService timers;
    private final Set<DeviceConnection> open = ConcurrentHashMap.newKeySet();
    final OutboundMeters outbound = new OutboundMeters();

    private final PushHub push;
    private final ConnectionLimits limits;
    /** Connections closed because nothing arrived from them for IM_WS_IDLE_MS. */
    final AtomicLong idleCloses = new AtomicLong();

    WebSocketEndpoint(FrameDispatcher dispatcher, GatewayConfig cfg, ScheduledExecutorService timers, PushHub push,
                      ConnectionLimits limits) {
        this.dispatcher = dispatcher;
        this.cfg = cfg;
        this.timers = timers;
        this.push = push;
        this.limits = limits;
        long every = cfg.wsIdle().toMillis() / 3;
        timers.scheduleWithFixedDelay(this::pingOrCloseIdle, every, every, TimeUnit.MILLISECONDS);
    }

    /**
     * Pings every authenticated connection (clients answer with a pong on their own: browsers,
     * the JDK's and Node's WebSocket clients all do) and closes those from which nothing arrived
     * for IM_WS_IDLE_MS: a peer that vanished without a FIN does not hold its socket for ever.
     */
    private void pingOrCloseIdle() {
        long now = System.nanoTime();
        long idle = cfg.wsIdle().toNanos();
        for (DeviceConnection c : open) {
            if (c.principal() == null || !c.isOpen()) continue;
            if (now - c.lastRead > idle) {
                idleCloses.incrementAndGet();
                c.close(1001, "idle: nothing received for " + cfg.wsIdle().toSeconds() + " s");
                c.abort();
            } else {
                c.ping();
            }
        }
    }

    int openConnections() {
        return open.size();
    }

    /** The open connections (a live view). */
    Iterable<DeviceConnection> connections() {
        return open;
    }

    @Override
    public void onConnect(WebSocketHttpExchange exchange, WebSocketChannel channel) {
        DeviceConnection conn = new DeviceConnection(channel, cfg, timers, outbound);
        InetAddress from = conn.address();
        if (!limits.openFrom(from)) {
            conn.closeWithGrace(ConnectionLimits.TRY_AGAIN_LATER, "too many connections from this address");
            return;
        }
        open.add(conn);
        channel.addCloseTask(ch -> {
            open.remove(conn);
            limits.closedFrom(from);
            limits.left(conn);
            if (push != null) push.unsubscribe(conn);
            conn.onClosed();
        });
        timers.schedule(() -> {
            if (conn.principal() == null && conn.isOpen()) conn.close(4002, "auth timeout");
        }, cfg.authTimeout().toMillis(), TimeUnit.MILLISECONDS);
        channel.getReceiveSetter().set(new AbstractReceiveListener() {
            @Override
            protected long getMaxTextBufferSize() {
                return HARD_FRAME_LIMIT;
            }

            @Override
            protected long getMaxBinaryBufferSize() {
                return HARD_FRAME_LIMIT;
            }

            @Override
            protected void onFullTextMessage(WebSocketChannel ch, BufferedTextMessage message) {
                conn.lastRead = System.nanoTime();
                dispatcher.onText(conn, message.getData());
            }

            @Override
            protected void onFullPongMessage(WebSocketChannel ch, BufferedBinaryMessage message) {
                conn.lastRead = System.nanoTime();
                message.getData().free();
            }

            @Override
            protected void onFullPingMessage(WebSocketChannel ch, BufferedBinaryMessage message) throws IOException {
                conn.lastRead = System.nanoTime();
                super.onFullPingMessage(ch, message);   // answers with a pong
            }

            @Override
            protected void onFullBinaryMessage(WebSocketChannel ch, BufferedBinaryMessage message) {
                conn.lastRead = System.nanoTime();
                message.getData().free();
                conn.reply(new ErrorFrame(null, ErrorCode.BINARY_UNSUPPORTED, "binary frames are not supported; send JSON text frames"));
            }

            @Override
            protected void onError(WebSocketChannel ch, Throwable error) {
                log.debug("websocket error from {}: {}", ch.getPeerAddress(), error.toString());
                super.onError(ch, error);
            }
        });
        channel.resumeReceives();
    }

    void closeAll() {
        for (DeviceConnection c : open) c.close(1001, "gateway stopping");
    }
}
