package im.client;

import im.client.api.CaFileException;
import im.client.api.CertificateRejectedException;
import im.client.api.ClientListener;
import im.client.api.ClientOptions;
import im.client.api.ConnectionLostException;
import im.client.api.ConnectionState;
import im.client.api.ConversationSummary;
import im.client.api.DeviceInfo;
import im.client.api.ImErrorException;
import im.client.api.LocalStoreException;
import im.client.api.PendingSend;
import im.client.api.ReadStatus;
import im.client.api.ReceivedEvent;
import im.client.api.SendTimeoutException;
import im.client.api.SentAck;
import im.client.internal.ClientCore;
import im.client.internal.ClientFaults;
import im.protocol.Event;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * The Java SDK of the messaging platform: one device's connection to a gateway.
 *
 * <p>Sending is at-least-once with an idempotency key: {@link #send} writes the message to a
 * durable outbox (in the local store, {@code <stateDir>/client.db}) <em>before</em> the first attempt and removes it
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
 * {@code sub}; pushed events are stored in the local store (SQLite, {@code <stateDir>/client.db}, WAL
 * with {@code synchronous=FULL}; one transaction per batch holds its events and the cursors they move)
 * keyed by (conv, seq), so duplicates are no-ops; per conversation the store keeps a contiguous cursor (every visible event &le; cursor is
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
     * Opens the local store in {@code stateDir} (creating the directory and {@code client.db} if missing).
     * Does not connect. Reads one row per conversation, nothing per event. A state directory of the
     * SDK before the SQLite store is upgraded once: its {@code outbox.json} is imported; its
     * {@code events.log} is set aside and the events are synced again.
     *
     * @throws CaFileException if {@link ClientOptions#caFile()} is set and cannot be read or holds no PEM
     *         certificate (checked before anything else)
     * @throws LocalStoreException naming the file if the database is damaged or of a newer schema (it is
     *         left as it is, never recreated)
     * @throws IOException if another open client holds {@code stateDir}, or an old {@code outbox.json} is damaged
     */
    public static ImClient open(ClientOptions options) throws IOException {
        return open(options, Clock.systemUTC());
    }

    /** As {@link #open(ClientOptions)}, with the clock that stamps {@link PendingSend#createdAtMillis()}. */
    public static ImClient open(ClientOptions options, Clock clock) throws IOException {
        Objects.requireNonNull(clock, "clock");
        return open(options, clock, null, ClientFaults.NONE);
    }

    /**
     * As {@link #open(ClientOptions)}, on the shared threads of {@code runtime} instead of threads of
     * its own; {@code runtime} must stay open while this client is.
     */
    public static ImClient open(ClientOptions options, ClientRuntime runtime) throws IOException {
        Objects.requireNonNull(runtime, "runtime");
        return open(options, Clock.systemUTC(), runtime, ClientFaults.NONE);
    }

    /**
     * The one way in: on {@code runtime}'s threads (null: threads of its own), the receive path running
     * {@code faults}. Package-private: only the SDK's own crash tests pass hooks other than
     * {@link ClientFaults#NONE} (through {@code FaultInjection}, in the test sources).
     */
    static ImClient open(ClientOptions options, Clock clock, ClientRuntime runtime, ClientFaults faults) throws IOException {
        Objects.requireNonNull(options, "options");
        return new ImClient(options, ClientCore.open(options, clock, runtime == null ? null : runtime.threads(), faults));
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
     * @throws CertificateRejectedException if the uri is {@code wss://} and the gateway's certificate is not
     *         trusted (see {@link ClientOptions#caFile()}), has expired or names another host (not retried)
     * @throws IOException if the WebSocket could not be opened or was lost during the handshake
     * @throws IllegalStateException if the client is closed
     */
    public void connect() throws IOException {
        core.sessions().connect();
    }

    /**
     * {@link #connect()} without blocking: the future completes when the server answered {@code authed}
     * (or at once when connected), or exceptionally with what {@code connect()} would throw. Cancelling
     * it before it completed stops the attempt as {@link #disconnect()} does.
     */
    public CompletableFuture<Void> connectAsync() {
        CompletableFuture<Void> result = onWaiters(() -> {
            connect();
            return null;
        });
        result.whenComplete((v, e) -> {
            if (result.isCancelled()) {
                core.sessions().disconnect();
            }
        });
        return result;
    }

    /** What an async method runs on a waiting thread. */
    private interface Call<T> {
        T run() throws IOException;
    }

    /** Runs {@code call} on a thread that may wait for replies; its outcome completes the future. */
    private <T> CompletableFuture<T> onWaiters(Call<T> call) {
        CompletableFuture<T> result = new CompletableFuture<>();
        try {
            core.waiters().execute(() -> {
                if (result.isDone()) {
                    return; // cancelled before it started
                }
                try {
                    result.complete(call.run());
                } catch (IOException | RuntimeException e) {
                    result.completeExceptionally(e);
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            result.completeExceptionally(new IllegalStateException("client is closed"));
        }
        return result;
    }

    /** The connection state; {@link ClientListener#onStateChanged} reports every change. */
    public ConnectionState state() {
        return core.sessions().state();
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

    /**
     * {@link #send(String, String, Duration)} without blocking: the outbox entry is durable when this
     * returns (else it throws, as {@code send} does for local validation or a store failure); the
     * future completes with the {@link SentAck}, or exceptionally with what {@code send} would throw
     * ({@link ImErrorException}, {@link SendTimeoutException}, {@link ConnectionLostException}), with
     * the same keep/drop rules for the entry.
     *
     * <p>Cancelling the future ({@code cancel(...)}) before it completed withdraws the message: its
     * entry leaves the outbox and is never resent. An attempt already on the wire may still be
     * committed by the server; {@link ClientListener#onSent} then tells.
     */
    public CompletableFuture<SentAck> sendAsync(String conv, String body, Duration timeout) throws IOException {
        return core.sending().sendAsync(conv, body, timeout);
    }

    /** {@link #edit(String, long, String, Duration)} with the request timeout. */
    public SentAck edit(String conv, long seq, String body) throws IOException {
        return edit(conv, seq, body, options.requestTimeout());
    }

    /**
     * Replaces the text of the user's own message at {@code seq} with {@code body} (docs/protocol.md,
     * "Edit and recall"): an {@code edit} event of the log, sent through the outbox exactly as
     * {@link #send(String, String, Duration)} sends a message, with the same answers and keep/drop rules.
     * The server also refuses it terminally with {@code NOT_A_MESSAGE}, {@code NOT_SENDER},
     * {@code RECALLED} or {@code TOO_LATE}. The returned seq is the edit's.
     */
    public SentAck edit(String conv, long seq, String body, Duration timeout) throws IOException {
        return core.sending().change(Event.EDIT, conv, seq, body, timeout);
    }

    /** {@link #edit(String, long, String, Duration)} without blocking, as {@link #sendAsync} is to {@code send}. */
    public CompletableFuture<SentAck> editAsync(String conv, long seq, String body, Duration timeout) throws IOException {
        return core.sending().changeAsync(Event.EDIT, conv, seq, body, timeout);
    }

    /** {@link #recall(String, long, Duration)} with the request timeout. */
    public SentAck recall(String conv, long seq) throws IOException {
        return recall(conv, seq, options.requestTimeout());
    }

    /**
     * Takes the user's own message at {@code seq} back: a {@code recall} event of the log, sent as
     * {@link #edit} is. Once it is committed the message and its edits have no body on any device or
     * read path; a recall of a message already recalled is answered with the first ({@code dup}).
     */
    public SentAck recall(String conv, long seq, Duration timeout) throws IOException {
        return core.sending().change(Event.RECALL, conv, seq, "", timeout);
    }

    /** {@link #recall(String, long, Duration)} without blocking, as {@link #sendAsync} is to {@code send}. */
    public CompletableFuture<SentAck> recallAsync(String conv, long seq, Duration timeout) throws IOException {
        return core.sending().changeAsync(Event.RECALL, conv, seq, "", timeout);
    }

    /**
     * Withdraws the outbox entry of {@code cmid} (see {@link #pending()}): it is not resent. Returns
     * false if there is none (already confirmed, given up or withdrawn). An attempt already on the wire
     * may still be committed ({@link ClientListener#onSent} tells).
     */
    public boolean cancelPending(String cmid) {
        return core.sending().withdraw(java.util.Objects.requireNonNull(cmid, "cmid"));
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

    /**
     * {@link #resendPending()} without blocking: the future completes with its acks, or exceptionally
     * with what it would throw. Cancelling it stops the wait only; the resend goes on.
     */
    public CompletableFuture<List<SentAck>> resendPendingAsync() {
        return onWaiters(this::resendPending);
    }

    /**
     * A snapshot of the outbox in insertion order.
     *
     * @throws java.io.UncheckedIOException wrapping a {@link LocalStoreException} if the store cannot be read
     */
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

    /**
     * Every stored event of {@code conv} in seq order (including any held above the cursor, waiting for
     * a gap to close). Reads the whole conversation from the local store: for screens, use
     * {@link #eventsBefore} / {@link #eventsAfter}.
     *
     * @throws java.io.UncheckedIOException wrapping a {@link LocalStoreException} if the store cannot be read
     */
    public List<ReceivedEvent> events(String conv) {
        return core.receiving().events(conv);
    }

    // ------------------------------------------------------------------ local queries

    /**
     * A page of the local conversation list, the most recent last message first: every conversation
     * this device stored anything for (or has a read state of), with its last stored event, the read
     * cursor and the unread count now (as {@link #readStatus}). {@code after} is the last row of the previous page
     * (null for the first); {@code limit} 1 .. 1000. Reads only the rows of the page (keyset paging
     * over an index), never the history.
     *
     * @throws LocalStoreException if the local store cannot be read
     */
    public List<ConversationSummary> conversations(ConversationSummary after, int limit) throws IOException {
        return core.receiving().conversations(after, limit);
    }

    /**
     * Up to {@code limit} (1 .. 1000) stored events of {@code conv} just below {@code beforeSeq}, in seq
     * order: the page above the oldest one on screen ({@code Long.MAX_VALUE} for the latest page).
     * Events held above a gap are included; seqs this device cannot see are simply absent.
     *
     * @throws LocalStoreException if the local store cannot be read
     */
    public List<ReceivedEvent> eventsBefore(String conv, long beforeSeq, int limit) throws IOException {
        return core.receiving().eventsBefore(conv, beforeSeq, limit);
    }

    /** Up to {@code limit} (1 .. 1000) stored events of {@code conv} just above {@code afterSeq}, in seq order. */
    public List<ReceivedEvent> eventsAfter(String conv, long afterSeq, int limit) throws IOException {
        return core.receiving().eventsAfter(conv, afterSeq, limit);
    }

    /**
     * The versions of the message at {@code seq} of {@code conv} this device holds, oldest first: the
     * message as sent, then each of its edits (an {@code edit} event, its {@code body} the new text) in
     * seq order; every body empty once it was recalled. Empty when the message is not held. From the
     * local store, O(the message's edits).
     */
    public List<ReceivedEvent> editHistory(String conv, long seq) throws IOException {
        return core.receiving().editHistory(conv, seq);
    }

    /**
     * Stored messages whose body holds every word of {@code text} (case-insensitive, whole words; the
     * last word also matches as a prefix), newest stored first. {@code conv} null searches every
     * conversation; {@code before} is the last hit of the previous page (null for the first). SQLite
     * FTS5 index, kept in the same transaction as the events: the cost grows with the matching events
     * (with {@code conv} set, the matches in every conversation are filtered), not with the history.
     *
     * @throws LocalStoreException if the local store cannot be read
     */
    public List<ReceivedEvent> search(String text, String conv, ReceivedEvent before, int limit) throws IOException {
        return core.receiving().search(text, conv, before, limit);
    }

    /**
     * Tells the server the user has read {@code conv} up to {@code seq} (a {@code read}; the read
     * cursor is the user's, on every device, and never goes down). The future completes with the
     * conversation's {@link ReadStatus} once the server answered ({@code readack}, applied by the
     * unread rule; the cursor may be above {@code seq}, moved by another device).
     *
     * <p>Coalesced like acks: at most one {@code read} per conversation is in flight, and at most one
     * is sent per second per conversation; the calls made meanwhile are sent as one, with the highest of
     * their seqs, when it is answered and the second has passed, and their futures complete with that
     * answer (so an app may call this for every message the user sees). Cancelling a future withdraws its call while it waits for
     * that follow-up (the follow-up then carries the highest seq of the others, or is not sent); a
     * read already on the wire is not recalled. While offline (or when the connection ends before the
     * answer) the call waits for the next connection, as a send waits in the outbox, but in memory only:
     * it fails with {@link ConnectionLostException} when the client closes first. A read that timed out,
     * or was answered {@code UNAVAILABLE}, {@code RATE_LIMITED} or {@code INTERNAL} (at most
     * {@link ClientOptions#maxInternalErrors()} times), fails its callers but is sent again in the
     * background, with the reconnect backoff, until the server answers it: it may have committed with its
     * answer lost, and this device's own read state must follow the server's.
     *
     * <p>The future fails with {@link ImErrorException} when the server refuses the read
     * ({@code NOT_MEMBER}, {@code CURSOR_AHEAD}: {@code seq} above the head; or {@code BAD_FIELD},
     * also found locally for a malformed {@code conv} or a negative {@code seq}),
     * {@link SendTimeoutException} when no answer came within the request timeout, and
     * {@link ConnectionLostException} when the client closed before an answer.
     */
    public CompletableFuture<ReadStatus> markRead(String conv, long seq) {
        return core.receiving().markRead(conv, seq);
    }

    /**
     * The read cursor and unread count now of {@code conv} (docs/protocol.md, "Read state and unread
     * counts"): the unread of the latest read state the server gave plus the messages of other users
     * stored above its head. Kept in the local store, so it holds across restarts.
     * {@link ClientListener#onUnread} reports every change.
     *
     * @throws LocalStoreException if the local store cannot be read
     */
    public ReadStatus readStatus(String conv) throws IOException {
        return core.receiving().readStatus(java.util.Objects.requireNonNull(conv, "conv"));
    }

    /** {@link #readStatus}{@code (conv).unread()}. */
    public long unread(String conv) throws IOException {
        return readStatus(conv).unread();
    }

    /** The sum of {@link #unread} over every conversation of the local store (O(conversations)). */
    public long unreadTotal() throws IOException {
        return core.receiving().unreadTotal();
    }

    /**
     * Starts a sync loop of {@code conv} from the local cursor (or reruns it once when one is running),
     * then acks. Asynchronous: watch {@link #cursor}, {@link ClientListener#onCursor}. For tests and repair.
     *
     * @throws ConnectionLostException if not connected
     * @throws IllegalStateException if {@code autoReceive} is off
     */
    /**
     * The receipts of the user's own messages at {@code seqs} of {@code conv} (1 to 100): per
     * message, how many of the other members who may see it have read it and how many of their
     * devices have stored it, as the server's cursors say now (docs/protocol.md, "Receipts": a read
     * shows at once, a delivery within the ack throttle). Not stored; ask again to refresh. Fails with
     * {@link ImErrorException} ({@code NOT_SENDER} for a seq that is not a message of the user's),
     * {@link SendTimeoutException} or {@link ConnectionLostException}.
     */
    public CompletableFuture<List<im.protocol.Receipt>> receipts(String conv, List<Long> seqs) {
        return core.receiving().receipts(conv, seqs);
    }

    /**
     * Tells the other members' online devices of {@code conv} that this user is typing
     * ({@link ClientListener#onTyping} there). Call it on every keystroke: a frame is written at most
     * every 2 s per conversation, and only while connected (false when nothing was written).
     * Ephemeral and best effort: nothing is stored or resent.
     */
    public boolean typing(String conv) {
        return core.receiving().typing(conv);
    }

    public void syncNow(String conv) throws ConnectionLostException {
        core.receiving().syncNow(conv);
    }
}
