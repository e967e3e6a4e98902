package im.launcher.cli;

import im.client.api.CaFile;
import im.protocol.Acked;
import im.protocol.Auth;
import im.protocol.Authed;
import im.protocol.ClientFrame;
import im.protocol.ConvState;
import im.protocol.ErrorFrame;
import im.protocol.FrameCodec;
import im.protocol.Limits;
import im.protocol.ProtocolException;
import im.protocol.ReadAck;
import im.protocol.ReceiptsReply;
import im.protocol.Sent;
import im.protocol.ServerFrame;
import im.protocol.Sub;
import im.protocol.Subbed;
import im.protocol.Synced;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.security.cert.CertificateException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;

/**
 * One device's WebSocket connection for the CLI, speaking the wire protocol through the shared
 * {@link FrameCodec}. Replies are matched to requests by rid; frames the server sends on its own
 * ({@code event}, {@code hint}, {@code unread}, {@code typing}, an error without rid) and the end of
 * the connection go to {@link #inbox()} in arrival order, for a single-threaded caller to handle.
 */
final class DeviceSocket implements AutoCloseable {
    private static final FrameCodec CODEC = new FrameCodec();

    /** No reply within the timeout: the request may or may not have been carried out. */
    static final class NoReply extends CliException {
        NoReply(String message) {
            super(message);
        }
    }

    /** The connection ended; {@code why} says how. Put into the inbox last. */
    record Closed(String why) {}

    private final URI uri;
    private final Duration timeout;
    private final BlockingQueue<Object> inbox = new LinkedBlockingQueue<>();
    private final Map<String, CompletableFuture<ServerFrame>> pending = new ConcurrentHashMap<>();
    private final AtomicLong rids = new AtomicLong();
    private volatile WebSocket ws;
    private volatile String closedWhy;
    private Authed authed;

    private DeviceSocket(URI uri, Duration timeout) {
        this.uri = uri;
        this.timeout = timeout;
    }

    /**
     * Connects with {@code http} (whose trust decides which {@code wss://} certificates are accepted) and
     * authenticates; a refused token is a {@link CliException} naming the server's code, and so is a
     * certificate the client did not accept.
     */
    static DeviceSocket open(HttpClient http, URI uri, String token, Duration timeout) {
        DeviceSocket s = new DeviceSocket(uri, timeout);
        try {
            s.ws = http.newWebSocketBuilder().connectTimeout(timeout)
                    .buildAsync(uri, s.new Listener()).get(timeout.toMillis() + 1000, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            CertificateException rejected = CaFile.rejection(e.getCause());
            if (rejected != null) {
                throw new CliException("cannot connect to " + uri + ": the gateway's certificate is not accepted (" + rejected.getMessage()
                        + "); pass --ca-file with the CA that signed it (or set IM_CA_FILE), and a --gateway host it was issued for");
            }
            throw new CliException("cannot reach gateway at " + uri + ": " + AdminClient.describe(e.getCause()));
        } catch (TimeoutException e) {
            throw new CliException("cannot reach gateway at " + uri + ": no connection within " + timeout.toSeconds() + " s");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CliException("interrupted");
        }
        try {
            s.authed = (Authed) s.request(new Auth(s.nextRid(), token));
        } catch (RuntimeException e) {
            s.close();
            throw e;
        }
        return s;
    }

    Authed authed() {
        return authed;
    }

    BlockingQueue<Object> inbox() {
        return inbox;
    }

    String nextRid() {
        return "cli" + rids.incrementAndGet();
    }

    /**
     * Sends a request and waits for its reply; an {@code error} reply becomes a {@link CliException}
     * "CODE: message".
     */
    ServerFrame request(ClientFrame frame) {
        return request(frame, timeout);
    }

    private ServerFrame request(ClientFrame frame, Duration replyWithin) {
        String rid = frame.rid();
        CompletableFuture<ServerFrame> reply = new CompletableFuture<>();
        pending.put(rid, reply);
        try {
            if (closedWhy != null) throw new CliException(closedWhy);
            ws.sendText(CODEC.encode(frame), true).get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            ServerFrame f = reply.get(replyWithin.toMillis(), TimeUnit.MILLISECONDS);
            if (f instanceof ErrorFrame e) throw new CliException(e.code().wire() + ": " + e.msg());
            return f;
        } catch (TimeoutException e) {
            throw new NoReply("no reply from the gateway at " + uri + " within " + timeout.toSeconds() + " s");
        } catch (ExecutionException e) {
            throw e.getCause() instanceof CliException c ? c
                    : new CliException("connection to " + uri + " failed: " + AdminClient.describe(e.getCause()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CliException("interrupted");
        } finally {
            pending.remove(rid);
        }
    }

    /**
     * Sends a {@code send}, {@code edit} or {@code recall} ({@code what}: "message", "edit", "recall")
     * and waits for its {@code sent}. Without a reply it may or may not be stored: the error says so
     * and how to find out (the same cmid again is answered {@code dup=true} if it was).
     */
    Sent commit(ClientFrame frame, String cmid, String what) {
        try {
            return (Sent) request(frame);
        } catch (NoReply e) {
            throw new CliException(e.getMessage() + "; the " + what + " may or may not be stored: resend with --cmid " + cmid
                    + " (a stored one is answered dup=true)");
        }
    }

    /**
     * Sends a request the server answers only when it refuses it ({@code typing}): an {@code error}
     * within {@code wait} becomes a {@link CliException}; no reply by then means it was taken.
     */
    void post(ClientFrame frame, Duration wait) {
        try {
            request(frame, wait);
        } catch (NoReply e) {
            // nothing answers a request that was taken
        }
    }

    /**
     * Pages {@code sub} from the first conversation, handing each listed one to {@code until} (pushes
     * and hints are on for it from its page on) until that returns true or the pages end; returns the
     * conversation it stopped at, or null.
     */
    ConvState subscribe(Predicate<ConvState> until) {
        String after = null;
        while (true) {
            Subbed page = (Subbed) request(new Sub(nextRid(), after, Limits.SUB_MAX_LIMIT));
            for (ConvState c : page.convs()) {
                if (until.test(c)) return c;
            }
            if (!page.more() || page.convs().isEmpty()) return null;
            after = page.convs().get(page.convs().size() - 1).conv();
        }
    }

    /** A server frame in its wire JSON, for {@code --json} output. */
    static String json(ServerFrame f) {
        return CODEC.encode(f);
    }

    private static String rid(ServerFrame f) {
        if (f instanceof Authed a) return a.rid();
        if (f instanceof Sent s) return s.rid();
        if (f instanceof Acked a) return a.rid();
        if (f instanceof Subbed s) return s.rid();
        if (f instanceof Synced s) return s.rid();
        if (f instanceof ReadAck r) return r.rid();
        if (f instanceof ReceiptsReply r) return r.rid();
        if (f instanceof ErrorFrame e) return e.rid();
        return null;
    }

    private void ended(String why) {
        if (closedWhy != null) return;
        closedWhy = why;
        CliException e = new CliException(why);
        pending.values().forEach(p -> p.completeExceptionally(e));
        inbox.add(new Closed(why));
    }

    /** Closes politely (close frame), then gives up after a second. */
    @Override
    public void close() {
        WebSocket w = ws;
        if (w == null) return;
        closedWhy = closedWhy == null ? "closed" : closedWhy;
        try {
            w.sendClose(WebSocket.NORMAL_CLOSURE, "bye").get(1, TimeUnit.SECONDS);
        } catch (Exception e) {
            // already closed or not answering: abort below
        }
        w.abort();
    }

    private final class Listener implements WebSocket.Listener {
        private final StringBuilder text = new StringBuilder();

        @Override
        public CompletionStage<?> onText(WebSocket w, CharSequence data, boolean last) {
            text.append(data);
            if (last) {
                String s = text.toString();
                text.setLength(0);
                handle(s);
            }
            w.request(1);
            return null;
        }

        private void handle(String s) {
            ServerFrame f;
            try {
                f = CODEC.decodeServer(s);
            } catch (ProtocolException e) {
                inbox.add(new Closed("the gateway sent a frame this version cannot read: " + e.getMessage()));
                return;
            }
            String rid = rid(f);
            CompletableFuture<ServerFrame> p = rid == null ? null : pending.get(rid);
            if (p != null) p.complete(f);
            else inbox.add(f);
        }

        @Override
        public CompletionStage<?> onClose(WebSocket w, int status, String reason) {
            ended("the gateway closed the connection (" + status + (reason.isEmpty() ? "" : " " + reason) + ")");
            return null;
        }

        @Override
        public void onError(WebSocket w, Throwable error) {
            ended("connection to " + uri + " lost: " + AdminClient.describe(error));
        }
    }
}
