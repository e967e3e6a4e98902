package im.client.internal;

import im.client.api.CaFile;
import im.client.api.CertificateRejectedException;
import im.client.api.ClientListener;
import im.client.api.ClientOptions;
import im.client.api.ConnectionLostException;
import im.client.api.ConnectionReplacedException;
import im.client.api.ConnectionState;
import im.client.api.DeviceInfo;
import im.client.api.ImErrorException;
import im.protocol.Auth;
import im.protocol.Authed;
import im.protocol.ErrorFrame;
import im.protocol.ProtocolException;
import im.protocol.Sent;
import im.protocol.ServerFrame;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.security.cert.CertificateException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The connection lifecycle of one client: connect and authenticate, the current connection,
 * automatic reconnects with the {@link RetryRule} backoff, disconnect, and the dispatch of every
 * server frame to its pending request or, if it answers none, to the {@link Hooks}.
 */
public final class Sessions {
    private static final Logger log = LoggerFactory.getLogger(Sessions.class);

    /** What the rest of the client does with a connection's events. */
    interface Hooks {
        /** A connection was authenticated and installed as the current one. */
        void connected(Connection conn);

        /** A frame that answers no pending request: a push, a hint or a late reply (on the reader thread). */
        void unmatched(Connection conn, ServerFrame frame);

        /** A {@code sent} answering {@code send}, before its waiter sees it (on the reader thread). */
        void sent(String cmid, Sent sent, boolean outboxEntry);
    }

    private final ClientOptions options;
    private final HttpClient http;
    /** Reconnects (and, from the client, automatic resends: one lane, so they never overlap). */
    private final Lane scheduler;
    private final Listeners listeners;
    private final RetryRule retry;
    private final PendingRequests.Rids rids;
    private Hooks hooks;
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
    /** The state last reported to the listeners. Guarded by stateLock. */
    private ConnectionState state = ConnectionState.DISCONNECTED;

    Sessions(ClientOptions options, HttpClient http, Lane scheduler, Listeners listeners, RetryRule retry, PendingRequests.Rids rids) {
        this.options = options;
        this.http = http;
        this.scheduler = scheduler;
        this.listeners = listeners;
        this.retry = retry;
        this.rids = rids;
    }

    /** Set once, before the first connect. */
    void hooks(Hooks h) {
        this.hooks = h;
    }

    /** Connects and authenticates unless connected; see {@link im.client.ImClient#connect()}. */
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
            state(ConnectionState.CONNECTING, null);
            Connection conn;
            try {
                conn = handshake();
            } catch (IOException e) {
                state(ConnectionState.DISCONNECTED, e);
                throw e;
            }
            if (!install(conn, gen)) {
                conn.abort();
                ConnectionLostException e = new ConnectionLostException("connection ended (or disconnect was called) during connect");
                state(ConnectionState.DISCONNECTED, e);
                throw e;
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

    public DeviceInfo device() {
        return device;
    }

    public ConnectionState state() {
        synchronized (stateLock) {
            return state;
        }
    }

    /**
     * Reports {@code next} if it is a change (CLOSED is final). Fired under stateLock, so the
     * listeners see the changes in the order they happened.
     */
    void state(ConnectionState next, Throwable cause) {
        synchronized (stateLock) {
            if (state == next || state == ConnectionState.CLOSED) {
                return;
            }
            state = next;
            listeners.fire("onStateChanged", l -> l.onStateChanged(next, cause));
        }
    }

    /** The current connection. */
    Connection current() throws ConnectionLostException {
        synchronized (stateLock) {
            if (current == null) {
                throw new ConnectionLostException(closed ? "client is closed" : "not connected");
            }
            return current;
        }
    }

    /** Ends the current session: no more reconnects, and the connection (returned, may be null) is detached. */
    Connection detach() {
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

    /** Closes the socket; no automatic reconnect until {@link #connect()} is called again. */
    public void disconnect() {
        Connection old = detach();
        if (old != null) {
            old.shutdown(new ConnectionLostException("disconnected by the client"));
            old.closeGracefully();
            log.info("disconnected from {}", options.uri());
            listeners.fire("onDisconnected", l -> l.onDisconnected(null));
        }
        state(ConnectionState.DISCONNECTED, null);
    }

    /** Marks the client closed; true only for the first call. */
    public boolean markClosed() {
        synchronized (stateLock) {
            if (closed) {
                return false;
            }
            closed = true;
            return true;
        }
    }

    /** The client closed: the final state. */
    void reportClosed() {
        state(ConnectionState.CLOSED, null);
    }

    /** Drops the current connection without a close handshake, as a killed process would. */
    void abortCurrent(String why) {
        Connection old = detach();
        if (old != null) {
            old.shutdown(new ConnectionLostException(why));
            old.abortSocket();
        }
    }

    private Connection handshake() throws IOException {
        Duration timeout = options.requestTimeout();
        Connection conn = new Connection(new Connection.Handler() {
            @Override
            public void onText(Connection c, String text) {
                dispatch(c, text);
            }

            @Override
            public void onLost(Connection c, IOException cause) {
                onConnectionLost(c, cause);
            }
        }, timeout);
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
            CertificateException rejected = CaFile.rejection(c);
            if (rejected != null) {
                throw new CertificateRejectedException("cannot connect to " + options.uri() + ": the TLS handshake failed because "
                        + "the gateway's certificate is not accepted (" + rejected.getMessage() + "); it must be signed by a CA of "
                        + (options.caFile() != null ? "the caFile " + options.caFile() : "the JVM's trust store (or set caFile)")
                        + ", be valid now and name the host " + options.uri().getHost(), c);
            }
            throw new ConnectionLostException("cannot connect to " + options.uri() + ": " + c, c);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            opening.thenAccept(WebSocket::abort);
            throw new InterruptedIOException("interrupted while connecting to " + options.uri());
        }
        Auth auth = new Auth(rids.next(), options.token());
        ServerFrame reply;
        try {
            reply = PendingRequests.await(conn.submit(auth, false), timeout, "auth");
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
        state(ConnectionState.CONNECTED, null);
        listeners.fire("onConnected", ClientListener::onConnected);
        hooks.connected(conn);
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
            if (isTerminal(cause) || cause instanceof ConnectionReplacedException) {
                reconnectActive = false;   // a replaced connection: reconnecting would take the device back from the newer one
            }
            reconnect = reconnectActive && !closed;
            gen = session;
        }
        if (isTerminal(cause)) {
            log.error("server ended the session terminally ({}); not reconnecting", cause.getMessage());
        } else {
            log.info("connection to {} lost: {}{}", options.uri(), cause.getMessage(), reconnect ? "; reconnecting" : "");
        }
        listeners.fire("onDisconnected", l -> l.onDisconnected(cause));
        state(ConnectionState.DISCONNECTED, cause);
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
            try {
                reconnectTask = scheduler.schedule(() -> reconnect(gen), delay, TimeUnit.MILLISECONDS);
            } catch (RejectedExecutionException e) {
                log.debug("client closed; no reconnect");
            }
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
            state(ConnectionState.CONNECTING, null);
            try {
                conn = handshake();
            } catch (ImErrorException e) {
                if (e.code().closesConnection()) {
                    stopReconnecting("reconnect rejected by the server (" + e.getMessage() + ")", e);
                    return;
                }
                log.info("reconnect to {} failed: {}", options.uri(), e.getMessage());
                state(ConnectionState.DISCONNECTED, e);
                scheduleReconnect(gen);
                return;
            } catch (CertificateRejectedException e) {
                // Retrying cannot help until the trust or the gateway's certificate changes.
                stopReconnecting("reconnect failed: " + e.getMessage(), e);
                return;
            } catch (InterruptedIOException e) {
                return; // the client is closing
            } catch (IOException e) {
                log.info("reconnect to {} failed: {}", options.uri(), e.getMessage());
                state(ConnectionState.DISCONNECTED, e);
                scheduleReconnect(gen);
                return;
            }
            if (!install(conn, gen)) {
                conn.abort();
                state(ConnectionState.DISCONNECTED, new ConnectionLostException("connection ended during reconnect"));
                scheduleReconnect(gen);
            }
        } finally {
            connectLock.unlock();
        }
    }

    /** A reconnect met a failure that retrying cannot fix: report it and stop until {@link #connect()}. */
    private void stopReconnecting(String why, IOException cause) {
        synchronized (stateLock) {
            reconnectActive = false;
        }
        log.error("{}; not reconnecting", why);
        listeners.fire("onDisconnected", l -> l.onDisconnected(cause));
        state(ConnectionState.DISCONNECTED, cause);
    }

    private void dispatch(Connection conn, String text) {
        ServerFrame frame;
        try {
            frame = Connection.CODEC.decodeServer(text);
        } catch (ProtocolException e) {
            log.warn("ignoring a server frame that does not parse ({}): {}", e.code(), e.getMessage());
            return;
        }
        PendingRequests.Pending p = conn.pending.take(frame);
        if (p == null) {
            hooks.unmatched(conn, frame);
            return;
        }
        if (frame instanceof Sent s && p.cmid() != null) {
            hooks.sent(p.cmid(), s, p.outboxEntry());
        }
        p.future().complete(frame);
    }
}
