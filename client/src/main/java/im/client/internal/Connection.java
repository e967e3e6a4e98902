package im.client.internal;

import im.client.api.ConnectionLostException;
import im.client.api.ConnectionReplacedException;
import im.client.api.DeviceInfo;
import im.client.api.ImErrorException;
import im.protocol.ClientFrame;
import im.protocol.ErrorCode;
import im.protocol.FrameCodec;
import im.protocol.ServerFrame;
import java.io.IOException;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One WebSocket to the gateway: its reader (the JDK calls the listener methods one at a time), its
 * writer chain, its window of outstanding requests and its {@link PendingRequests}. Whole server
 * messages go to the {@link Handler}, and so does the end of the connection, once.
 */
final class Connection implements WebSocket.Listener {
    private static final Logger log = LoggerFactory.getLogger(Connection.class);
    static final FrameCodec CODEC = new FrameCodec();

    /** A server message assembled from WebSocket parts may not exceed this (a full synced page is ~8 MB). */
    private static final int MAX_INBOUND_CHARS = 64 * 1024 * 1024;
    /** How long a graceful close waits for the close handshake before aborting the socket. */
    private static final long CLOSE_GRACE_MILLIS = 1000;
    /**
     * At most this many requests are outstanding on one connection; more wait here, in order,
     * instead of being refused by the gateway (its default in-flight limit, IM_MAX_INFLIGHT, is 64).
     * A burst of acks and syncs after a reconnect in many conversations stays within it.
     */
    static final int MAX_OUTSTANDING = 32;

    /** What the connection reports. */
    interface Handler {
        /** A whole text message, on the reader thread. */
        void onText(Connection conn, String text);

        /** The connection ended (or the client aborted it); called at most once per connection that matters. */
        void onLost(Connection conn, IOException cause);
    }

    volatile WebSocket ws;
    volatile DeviceInfo device;
    /** Replies awaited on this socket, by rid (a reply never arrives on another socket). */
    final PendingRequests pending = new PendingRequests();
    private final Handler handler;
    private final long slotTimeoutMillis;
    /** Requests waiting for room in the window; guarded by itself, as is {@code outstanding}. */
    private final ArrayDeque<Runnable> waiting = new ArrayDeque<>();
    private int outstanding;
    private final AtomicBoolean open = new AtomicBoolean(true);
    private final CompletableFuture<Void> inputClosed = new CompletableFuture<>();
    private final StringBuilder inbound = new StringBuilder();
    private final Object sendLock = new Object();
    /** The JDK WebSocket allows one outstanding sendText; frames are chained. Guarded by sendLock. */
    private CompletableFuture<Void> sendChain = CompletableFuture.completedFuture(null);

    Connection(Handler handler, Duration requestTimeout) {
        this.handler = handler;
        this.slotTimeoutMillis = requestTimeout.toMillis();
    }

    boolean isOpen() {
        return open.get();
    }

    /** Writes the request now if the window has room, else when a reply frees it. The future gets the reply. */
    CompletableFuture<ServerFrame> submit(ClientFrame frame, boolean outboxEntry) {
        CompletableFuture<ServerFrame> fut = new CompletableFuture<>();
        Runnable write = () -> submitNow(frame, outboxEntry, fut);
        boolean now;
        synchronized (waiting) {
            now = outstanding < MAX_OUTSTANDING;
            if (now) outstanding++;
            else waiting.add(write);
        }
        // The slot is freed by the reply, or after the request timeout if no reply ever comes
        // (a lost reply must not shrink the window for the rest of the connection's life).
        AtomicBoolean freed = new AtomicBoolean();
        fut.copy().orTimeout(slotTimeoutMillis, TimeUnit.MILLISECONDS).whenComplete((r, e) -> {
            if (!freed.compareAndSet(false, true)) return;
            Runnable next;
            synchronized (waiting) {
                next = waiting.poll();
                if (next == null) outstanding--;
            }
            if (next != null) next.run();
        });
        if (now) write.run();
        return fut;
    }

    /**
     * Writes a frame that is answered only when refused ({@code typing}): no reply slot, no window.
     * False when the connection is closed; a failed write ends the connection as for a request.
     */
    boolean sendOneWay(ClientFrame frame) {
        if (!isOpen()) {
            return false;
        }
        sendText(CODEC.encode(frame)).whenComplete((v, e) -> {
            if (e != null) {
                handler.onLost(this, new ConnectionLostException("write failed: " + e, e));
                abortSocket();
            }
        });
        return true;
    }

    /** Registers the reply slot for {@code frame}'s rid, then writes the frame. Never throws: failures complete the future. */
    private void submitNow(ClientFrame frame, boolean outboxEntry, CompletableFuture<ServerFrame> fut) {
        String rid = frame.rid();
        if (!pending.register(frame, outboxEntry, fut)) {
            fut.completeExceptionally(new IllegalArgumentException("a request with rid " + rid + " is already pending"));
            return;
        }
        // Checked after registering: either shutdown() sees the slot or this sees the closed flag.
        if (!isOpen()) {
            pending.remove(rid);
            fut.completeExceptionally(new ConnectionLostException("not connected"));
            return;
        }
        sendText(CODEC.encode(frame)).whenComplete((v, e) -> {
            if (e != null) {
                pending.remove(rid);
                fut.completeExceptionally(new ConnectionLostException("cannot write frame: " + e, e));
                handler.onLost(this, new ConnectionLostException("write failed: " + e, e));
                abortSocket();
            }
        });
    }

    private CompletableFuture<Void> sendText(String text) {
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
        pending.failAll(cause);
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
        handler.onLost(this, new ConnectionLostException("connection aborted by the client"));
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
            handler.onLost(this, new ConnectionLostException("server message exceeds " + MAX_INBOUND_CHARS + " chars"));
            abortSocket();
            return null;
        }
        inbound.append(data);
        if (last) {
            String text = inbound.toString();
            inbound.setLength(0);
            handler.onText(this, text);
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
        handler.onLost(this, causeForClose(statusCode, reason));
        return null;
    }

    @Override
    public void onError(WebSocket webSocket, Throwable error) {
        inputClosed.complete(null);
        handler.onLost(this, new ConnectionLostException("connection failed: " + error, error));
    }

    private static IOException causeForClose(int status, String reason) {
        if (status == ConnectionReplacedException.STATUS) {
            return new ConnectionReplacedException("replaced by a newer connection of this device (" + status
                    + (reason == null || reason.isEmpty() ? "" : " " + reason) + "); not reconnecting");
        }
        for (ErrorCode code : ErrorCode.values()) {
            if (code.closesConnection() && code.closeStatus() == status) {
                return new ImErrorException(code, null, "server closed the connection with status " + status);
            }
        }
        return new ConnectionLostException("server closed the connection: " + status
                + (reason == null || reason.isEmpty() ? "" : " " + reason));
    }
}
