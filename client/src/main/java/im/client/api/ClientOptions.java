package im.client.api;

import im.protocol.Limits;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * Settings of an {@link im.client.ImClient}, validated at construction (the message names the field).
 *
 * <ul>
 *   <li>{@code uri}: the gateway WebSocket, e.g. {@code ws://localhost:8080/ws}, or {@code wss://host:port/ws} for a
 *       gateway serving TLS (trusted as {@code caFile} says)</li>
 *   <li>{@code token}: the device token sent in {@code auth}</li>
 *   <li>{@code stateDir}: directory of the durable client state: the local store {@code client.db} (SQLite:
 *       events, cursors, outbox) and a {@code lock} file; created if missing; one open client per directory</li>
 *   <li>{@code requestTimeout}: default wait for a reply (send, auth, resend); default 5 s</li>
 *   <li>{@code reconnectMin} / {@code reconnectMax}: bounds of the exponential backoff (with jitter) of every
 *       retry: reconnects, outbox entries answered {@code INTERNAL}, failed acks and subs; default 100 ms / 5 s</li>
 *   <li>{@code autoReconnect}: re-establish a lost connection and resend the outbox after every connect; default true</li>
 *   <li>{@code autoReceive}: after every connect send {@code sub}, store pushed events, sync gaps / hints /
 *       conversations behind their head, and ack the contiguous cursor; default true. Off, the client
 *       stores nothing and sends no sub/sync/ack (a send-only device).</li>
 *   <li>{@code ackDelay}: the ack coalescing window: acks wait this long after the first stored batch, so
 *       one cumulative ack covers every batch stored meanwhile; 0 = only "one ack in flight per
 *       conversation" coalescing; default 10 ms</li>
 *   <li>{@code syncLimit}: page size of automatic syncs, 1 .. {@link Limits#SYNC_MAX_LIMIT}; default 100</li>
 *   <li>{@code maxInternalErrors}: how many {@code INTERNAL} answers an outbox entry may get before it is
 *       given up ({@link ClientListener#onSendFailed}); with {@code autoReconnect} the client retries such
 *       an entry by itself with the reconnect backoff. The same cap holds for the INTERNAL answers
 *       (since the last success) to the receive path's acks ({@link ClientListener#onAckFailed}) and subs ({@link ClientListener#onSubscribeFailed});
 *       at least 1; default 5</li>
 *   <li>{@code caFile}: for a {@code wss://} uri, a PEM file of the CA certificates to trust instead of the
 *       JVM's default trust store (a private CA, or the gateway's self-signed certificate); read by
 *       {@link im.client.ImClient#open}, which throws {@link CaFileException} if it cannot be read or holds no
 *       certificate. The host name of the uri is still verified against the gateway's certificate.
 *       Default null: the JVM's trust store ({@code javax.net.ssl.trustStore}, else the JDK's {@code cacerts})</li>
 * </ul>
 */
public record ClientOptions(URI uri, String token, Path stateDir, Duration requestTimeout,
                            Duration reconnectMin, Duration reconnectMax, boolean autoReconnect,
                            boolean autoReceive, Duration ackDelay, int syncLimit,
                            int maxInternalErrors, Path caFile) {
    public static final int DEFAULT_MAX_INTERNAL_ERRORS = 5;
    public static final Duration DEFAULT_ACK_DELAY = Duration.ofMillis(10);
    public static final Duration DEFAULT_REQUEST_TIMEOUT = Duration.ofSeconds(5);
    public static final Duration DEFAULT_RECONNECT_MIN = Duration.ofMillis(100);
    public static final Duration DEFAULT_RECONNECT_MAX = Duration.ofSeconds(5);

    public ClientOptions {
        Objects.requireNonNull(uri, "uri");
        Objects.requireNonNull(token, "token");
        Objects.requireNonNull(stateDir, "stateDir");
        Objects.requireNonNull(requestTimeout, "requestTimeout");
        Objects.requireNonNull(reconnectMin, "reconnectMin");
        Objects.requireNonNull(reconnectMax, "reconnectMax");
        Objects.requireNonNull(ackDelay, "ackDelay");
        if (ackDelay.isNegative()) {
            throw new IllegalArgumentException("ackDelay: must not be negative, got " + ackDelay);
        }
        if (syncLimit < 1 || syncLimit > Limits.SYNC_MAX_LIMIT) {
            throw new IllegalArgumentException("syncLimit: must be between 1 and " + Limits.SYNC_MAX_LIMIT + ", got " + syncLimit);
        }
        if (maxInternalErrors < 1) {
            throw new IllegalArgumentException("maxInternalErrors: must be at least 1, got " + maxInternalErrors);
        }
        String scheme = uri.getScheme();
        if (!"ws".equalsIgnoreCase(scheme) && !"wss".equalsIgnoreCase(scheme)) {
            throw new IllegalArgumentException("uri: scheme must be ws or wss, got " + uri);
        }
        if (caFile != null && !"wss".equalsIgnoreCase(scheme)) {
            throw new IllegalArgumentException("caFile: only for a wss:// uri, got " + uri);
        }
        if (!Limits.isValidToken(token)) {
            throw new IllegalArgumentException("token: must be 1 to " + Limits.MAX_TOKEN_CHARS
                    + " printable ASCII characters without spaces");
        }
        positive("requestTimeout", requestTimeout);
        positive("reconnectMin", reconnectMin);
        positive("reconnectMax", reconnectMax);
        if (reconnectMin.compareTo(reconnectMax) > 0) {
            throw new IllegalArgumentException("reconnectMin: must not exceed reconnectMax (" + reconnectMax + ")");
        }
    }

    /** The settings of the first version (receive settings at their defaults). */
    public ClientOptions(URI uri, String token, Path stateDir, Duration requestTimeout,
                         Duration reconnectMin, Duration reconnectMax, boolean autoReconnect) {
        this(uri, token, stateDir, requestTimeout, reconnectMin, reconnectMax, autoReconnect,
                true, DEFAULT_ACK_DELAY, Limits.SYNC_DEFAULT_LIMIT, DEFAULT_MAX_INTERNAL_ERRORS, null);
    }

    /** Options with the defaults: request timeout 5 s, reconnect backoff 100 ms .. 5 s, auto reconnect on. */
    public static ClientOptions of(URI uri, String token, Path stateDir) {
        return new ClientOptions(uri, token, stateDir, DEFAULT_REQUEST_TIMEOUT,
                DEFAULT_RECONNECT_MIN, DEFAULT_RECONNECT_MAX, true);
    }

    public ClientOptions withAutoReconnect(boolean b) {
        return with(c -> c.autoReconnect = b);
    }

    public ClientOptions withRequestTimeout(Duration d) {
        return with(c -> c.requestTimeout = d);
    }

    public ClientOptions withUri(URI u) {
        return with(c -> c.uri = u);
    }

    public ClientOptions withReconnectBackoff(Duration min, Duration max) {
        return with(c -> {
            c.reconnectMin = min;
            c.reconnectMax = max;
        });
    }

    public ClientOptions withAutoReceive(boolean b) {
        return with(c -> c.autoReceive = b);
    }

    public ClientOptions withAckDelay(Duration d) {
        return with(c -> c.ackDelay = d);
    }

    public ClientOptions withSyncLimit(int n) {
        return with(c -> c.syncLimit = n);
    }

    public ClientOptions withMaxInternalErrors(int n) {
        return with(c -> c.maxInternalErrors = n);
    }

    /** Trust the CA certificates of this PEM file instead of the JVM's trust store; null: the JVM's. */
    public ClientOptions withCaFile(Path file) {
        return with(c -> c.caFile = file);
    }

    /** A copy of these options with {@code change} applied, validated like any new instance. */
    private ClientOptions with(Consumer<Copy> change) {
        Copy c = new Copy(this);
        change.accept(c);
        return c.build();
    }

    /** The components of a {@link ClientOptions} as mutable fields: what a wither changes before the copy is built. */
    private static final class Copy {
        URI uri;
        String token;
        Path stateDir;
        Duration requestTimeout;
        Duration reconnectMin;
        Duration reconnectMax;
        boolean autoReconnect;
        boolean autoReceive;
        Duration ackDelay;
        int syncLimit;
        int maxInternalErrors;
        Path caFile;

        Copy(ClientOptions o) {
            uri = o.uri;
            token = o.token;
            stateDir = o.stateDir;
            requestTimeout = o.requestTimeout;
            reconnectMin = o.reconnectMin;
            reconnectMax = o.reconnectMax;
            autoReconnect = o.autoReconnect;
            autoReceive = o.autoReceive;
            ackDelay = o.ackDelay;
            syncLimit = o.syncLimit;
            maxInternalErrors = o.maxInternalErrors;
            caFile = o.caFile;
        }

        ClientOptions build() {
            return new ClientOptions(uri, token, stateDir, requestTimeout, reconnectMin, reconnectMax, autoReconnect,
                    autoReceive, ackDelay, syncLimit, maxInternalErrors, caFile);
        }
    }

    /** Never print the token. */
    @Override
    public String toString() {
        return "ClientOptions[uri=" + uri + ", token=<redacted>, stateDir=" + stateDir + ", requestTimeout="
                + requestTimeout + ", reconnectMin=" + reconnectMin + ", reconnectMax=" + reconnectMax
                + ", autoReconnect=" + autoReconnect + ", autoReceive=" + autoReceive + ", ackDelay=" + ackDelay
                + ", syncLimit=" + syncLimit + ", maxInternalErrors=" + maxInternalErrors + ", caFile=" + caFile + "]";
    }

    private static void positive(String name, Duration d) {
        if (d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(name + ": must be positive, got " + d);
        }
    }
}
