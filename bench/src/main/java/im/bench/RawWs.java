package im.bench;

import im.protocol.Auth;
import im.protocol.Authed;
import im.protocol.ClientFrame;
import im.protocol.EventPush;
import im.protocol.FrameCodec;
import im.protocol.Hint;
import im.protocol.ServerFrame;
import im.protocol.Sub;
import im.protocol.Subbed;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A bare device connection for measurements: the JDK WebSocket and the protocol's {@link FrameCodec},
 * nothing else. Each server frame is stamped ({@link System#nanoTime()} and epoch microseconds) when
 * its first fragment arrives, before decoding, and handed to the {@link Handler} on the WebSocket's
 * reader (in order per connection). Before a handler is set, frames go to a queue (auth, sub).
 * Writes are chained so that callers on any thread never overlap two {@code sendText} calls.
 */
final class RawWs implements WebSocket.Listener {
    static final FrameCodec CODEC = new FrameCodec();
    /** Frames that could not be decoded or handled (printed once, counted). */
    static final AtomicLong HANDLER_ERRORS = new AtomicLong();

    interface Handler {
        void onFrame(RawWs conn, ServerFrame frame, long nanos, long epochMicros);
    }

    private final StringBuilder buf = new StringBuilder();
    private final BlockingQueue<ServerFrame> setup = new LinkedBlockingQueue<>();
    private final AtomicLong ridCounter = new AtomicLong();
    private final AtomicLong writeErrors;
    private long firstNanos;
    private long firstMicros;
    private volatile Handler handler;
    private volatile WebSocket ws;
    private CompletableFuture<?> chain = CompletableFuture.completedFuture(null);
    /** Free for the owner's per-connection state. */
    volatile Object state;

    private RawWs(AtomicLong writeErrors) {
        this.writeErrors = writeErrors;
    }

    static RawWs open(HttpClient http, URI uri, AtomicLong writeErrors) throws Exception {
        RawWs c = new RawWs(writeErrors);
        c.ws = http.newWebSocketBuilder().connectTimeout(Duration.ofSeconds(20)).buildAsync(uri, c)
                .get(30, TimeUnit.SECONDS);
        return c;
    }

    static long epochMicros() {
        Instant i = Instant.now();
        return i.getEpochSecond() * 1_000_000L + i.getNano() / 1_000;
    }

    String nextRid(String prefix) {
        return prefix + ridCounter.incrementAndGet();
    }

    /**
     * auth, then (optionally) sub; returns the subbed reply or null. Pushes and hints that arrive
     * before the reply are skipped (on a platform whose relay is still catching up, the join events
     * of a group created a moment ago): what was committed before sub is below the head it reports.
     */
    Subbed authAndSub(String token, boolean sub) throws Exception {
        send(new Auth(nextRid("a"), token));
        ServerFrame f = takeReply();
        if (!(f instanceof Authed)) throw new IllegalStateException("auth failed: " + f);
        if (!sub) return null;
        send(new Sub(nextRid("s")));
        f = takeReply();
        if (!(f instanceof Subbed s)) throw new IllegalStateException("sub failed: " + f);
        return s;
    }

    private ServerFrame takeReply() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            ServerFrame f = setup.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (f == null) throw new IllegalStateException("no reply within 30 s");
            if (!(f instanceof EventPush) && !(f instanceof Hint)) return f;
        }
    }

    void handler(Handler h) {
        this.handler = h;
    }

    synchronized void send(ClientFrame frame) {
        String text = CODEC.encode(frame);
        chain = chain.handle((v, e) -> null).thenCompose(v -> ws.sendText(text, true)).whenComplete((v, e) -> {
            if (e != null) writeErrors.incrementAndGet();
        });
    }

    void close() {
        WebSocket w = ws;
        if (w != null) w.abort();
    }

    @Override
    public void onOpen(WebSocket webSocket) {
        webSocket.request(1);
    }

    @Override
    public CompletionStage<?> onText(WebSocket webSocket, CharSequence data, boolean last) {
        if (buf.length() == 0) {
            firstNanos = System.nanoTime();
            firstMicros = epochMicros();
        }
        buf.append(data);
        try {
            if (last) {
                String text = buf.toString();
                buf.setLength(0);
                ServerFrame f = CODEC.decodeServer(text);
                Handler h = handler;
                if (h != null) h.onFrame(this, f, firstNanos, firstMicros);
                else setup.add(f);
            }
        } catch (RuntimeException e) {
            if (HANDLER_ERRORS.incrementAndGet() == 1) System.err.println("# raw client: " + e);
        } finally {
            webSocket.request(1);
        }
        return null;
    }
}
