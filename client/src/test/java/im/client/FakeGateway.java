package im.client;

import im.protocol.Ack;
import im.protocol.Auth;
import im.protocol.Authed;
import im.protocol.ClientFrame;
import im.protocol.ConvState;
import im.protocol.Event;
import im.protocol.FrameCodec;
import im.protocol.ServerFrame;
import im.protocol.Sub;
import im.protocol.Subbed;
import im.protocol.Sync;
import im.protocol.Synced;
import io.undertow.Handlers;
import io.undertow.Undertow;
import io.undertow.websockets.core.AbstractReceiveListener;
import io.undertow.websockets.core.BufferedTextMessage;
import io.undertow.websockets.core.WebSocketChannel;
import io.undertow.websockets.core.WebSockets;
import java.net.InetSocketAddress;
import java.net.URI;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import org.xnio.IoUtils;

/**
 * A scripted gateway on a real local WebSocket, for SDK tests that need a server but none of the
 * platform: every decoded client frame is recorded with its arrival time ({@link System#nanoTime})
 * and answered with what {@code script} returns (null: no reply).
 */
final class FakeGateway implements AutoCloseable {
    private static final FrameCodec CODEC = new FrameCodec();

    /** One frame the client sent, and when it arrived. */
    record Received(ClientFrame frame, long atNanos) {
    }

    private final List<Received> received = new CopyOnWriteArrayList<>();
    private final List<WebSocketChannel> open = new CopyOnWriteArrayList<>();
    private final Undertow server;

    FakeGateway(Function<ClientFrame, ServerFrame> script) {
        server = Undertow.builder()
                .addHttpListener(0, "127.0.0.1")
                .setHandler(Handlers.path().addExactPath("/ws", Handlers.websocket((exchange, channel) -> {
                    open.add(channel);
                    channel.getReceiveSetter().set(new AbstractReceiveListener() {
                        @Override
                        protected void onFullTextMessage(WebSocketChannel ch, BufferedTextMessage message) {
                            ClientFrame f = CODEC.decodeClient(message.getData());
                            received.add(new Received(f, System.nanoTime()));
                            ServerFrame reply = script.apply(f);
                            if (reply != null) {
                                WebSockets.sendText(CODEC.encode(reply), ch, null);
                            }
                        }
                    });
                    channel.resumeReceives();
                })))
                .build();
        server.start();
    }

    URI uri() {
        InetSocketAddress a = (InetSocketAddress) server.getListenerInfo().get(0).getAddress();
        return URI.create("ws://127.0.0.1:" + a.getPort() + "/ws");
    }

    /** The frames of type {@code type} received so far, in arrival order. */
    <T extends ClientFrame> List<Received> received(Class<T> type) {
        return received.stream().filter(r -> type.isInstance(r.frame())).toList();
    }

    /** Sends {@code frame} on every open socket (a push, or a reply the script held back). */
    void push(ServerFrame frame) {
        String text = CODEC.encode(frame);
        for (WebSocketChannel ch : open) WebSockets.sendText(text, ch, null);
    }

    /**
     * Closes every open socket with {@code status} (a WebSocket close frame), the server staying up.
     * The frame is queued on the socket's I/O thread, as the gateway does: queued from this thread
     * while a reply was being written, it was at times not written before the TCP close (the client
     * saw 1006, not the status).
     */
    void closeOpen(int status, String reason) {
        for (WebSocketChannel ch : open) ch.getIoThread().execute(() -> WebSockets.sendClose(status, reason, ch, null));
    }

    /**
     * The server goes away: every open socket is closed (the peer sees the TCP close at once),
     * then the server stops. Stopping alone shuts the I/O threads down without always closing the
     * sockets they hold, so a client could wait for TCP to give up on a peer that never answers.
     */
    @Override
    public void close() {
        for (WebSocketChannel ch : open) IoUtils.safeClose(ch);
        server.stop();
    }

    /** A gateway with one conversation holding one event the device has not stored yet. */
    static ServerFrame oneUnstoredEvent(ClientFrame f) {
        if (f instanceof Auth a) {
            return new Authed(a.rid(), "u-bo", "d-bo", 1);
        } else if (f instanceof Sub s) {
            return new Subbed(s.rid(), List.of(new ConvState("c-ab", 1, 0, 0, 0)));
        } else if (f instanceof Sync s) {
            Event e = new Event("c-ab", 1, "msg", "m-1", "u-ana", "cm-1", "hi", 1L);
            return new Synced(s.rid(), s.conv(), List.of(e), false, 1);
        } else if (f instanceof im.protocol.CatchUp c) {
            Event e = new Event("c-ab", 1, "msg", "m-1", "u-ana", "cm-1", "hi", 1L);
            return new im.protocol.CaughtUp(c.rid(), List.of(e), List.of(new im.protocol.CaughtUpRange("c-ab", 0, 1)), false, null);
        } else if (f instanceof Ack a) {
            return new im.protocol.Acked(a.rid(), a.conv(), a.seq());
        }
        throw new IllegalArgumentException("unexpected frame " + f);
    }
}
