package im.client;

import im.client.internal.ClientCore;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;

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
 * {@code events.state}, see {@code im.client.internal.DurableEventStore}) keyed by (conv, seq), so duplicates are
 * no-ops; per conversation the store keeps a contiguous cursor (every visible event &le; cursor is
 * stored). Only after a batch is durable is the cursor acked, cumulatively and coalesced (one ack
 * in flight per conversation, {@code ackDelay} window). A push above cursor+1 (a gap), a
 * {@code hint}, a conversation whose head is above the cursor in {@code subbed}, or an
 * {@code acked.delivered} above the cursor starts a sync loop from the cursor (one per conversation,
 * paging while {@code more}). Failed acks and subs are retried with the reconnect backoff and
 * the same {@code INTERNAL} cap ({@link ClientListener#onAckFailed}, {@link ClientListener#onSubscribeFailed}).
 *
 * <p>This class is the API; the machinery is in {@code im.client.internal} (not for applications).
 *
 * <p>Threads: listener callbacks run in order, one at a time, never on the socket reader;
 * reconnects and automatic resends run one at a time; the receive path (store writes with fsync,
 * sync/ack decisions) runs one task at a time, never on the socket reader. By default the client
 * has threads of its own (daemons, stopped by {@link #close()}); clients opened with a
 * {@link ClientRuntime} run on its shared threads instead. All public methods are thread-safe.
 */
public final class ImClient implements AutoCloseable {
    private final ClientOptions options;
    private final ClientCore core;

    private ImClient(ClientOptions options, ClientCore core) {
        this.options = options;
        this.core = core;
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
        return new ImClient(options, ClientCore.open(options, clock, null));
    }

    /**
     * As {@link #open(ClientOptions)}, on the shared threads of {@code runtime} instead of threads of
     * its own; {@code runtime} must stay open while this client is.
     */
    public static ImClient open(ClientOptions options, ClientRuntime runtime) throws IOException {
        Objects.requireNonNull(options, "options");
        Objects.requireNonNull(runtime, "runtime");
        return new ImClient(options, ClientCore.open(options, Clock.systemUTC(), runtime.threads()));
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
     * @throws IllegalStateException if the client is closed
     */
    public void connect() throws IOException {
        core.sessions().connect();
    }

    public boolean isConnected() {
        return core.sessions().isConnected();
    }

    /** User, device and install epoch from the last {@code authed}; null before the first successful connect. */
    public DeviceInfo device() {
        return core.sessions().device();
    }

    /** Closes the socket; no automatic reconnect until {@link #connect()} is called again. The durable state stays. */
    public void disconnect() {
        core.sessions().disconnect();
    }

    /** Disconnects and stops the client's threads (or its tasks on a {@link ClientRuntime}'s). Idempotent. */
    @Override
    public void close() {
        core.close();
    }

    public void addListener(ClientListener l) {
        core.listeners().add(l);
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
        return core.sending().send(conv, body, timeout);
    }

    /** Only writes a durable outbox entry (no send); returns its cmid. For tests and crash simulation. */
    public String enqueue(String conv, String body) throws IOException {
        return core.sending().enqueue(conv, body);
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
        return core.sending().resendPending();
    }

    /** A snapshot of the outbox in insertion order. */
    public List<PendingSend> pending() {
        return core.sending().pending();
    }

    // ------------------------------------------------------------------ receiving

    /** The durable contiguous cursor of {@code conv}: every visible event with seq &le; it is stored locally (0 if unknown). */
    public long cursor(String conv) {
        return core.receiving().cursor(conv);
    }

    /** The durable cursors of every conversation this device has stored anything for, by conversation id. */
    public Map<String, Long> cursors() {
        return core.receiving().cursors();
    }

    /** The stored events of {@code conv} in seq order (including any held above the cursor, waiting for a gap to close). */
    public List<ReceivedEvent> events(String conv) {
        return core.receiving().events(conv);
    }

    /**
     * Starts a sync loop of {@code conv} from the local cursor (or reruns it once when one is running),
     * then acks. Asynchronous: watch {@link #cursor}, {@link ClientListener#onCursor}. For tests and repair.
     *
     * @throws ConnectionLostException if not connected
     * @throws IllegalStateException if {@code autoReceive} is off
     */
    public void syncNow(String conv) throws ConnectionLostException {
        core.receiving().syncNow(conv);
    }
}
