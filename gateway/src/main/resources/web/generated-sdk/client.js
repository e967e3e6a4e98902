// Generated from client-js/src by `cd client-js && npm run build:web`; do not edit (npm test checks it).
import { Acks } from './internal/acks.js';
import { Connection } from './internal/connection.js';
import { Core, settings } from './internal/core.js';
import { Ephemeral } from './internal/ephemeral.js';
import { LocalStore } from './internal/local-store.js';
import { Reads } from './internal/reads.js';
import { ReceivePath } from './internal/receive-path.js';
import { SendPath } from './internal/send-path.js';
/**
 * A device's connection to the platform with the guarantees of docs/protocol.md, as the Java SDK:
 * `send` writes a durable outbox entry first and resends it with the same cmid until `sent` or a
 * terminal error; events are kept by (conv, seq) with a contiguous cursor; a gap or a hint syncs;
 * acks go out only after the store is durable, coalesced; reconnect with backoff and jitter;
 * INTERNAL retried at most `maxInternalErrors` times.
 *
 * This class is the public face only; the work is done by the parts in `internal/` (connection,
 * requests, outbox, receive path, acks, store, listeners), which are not exported.
 */
export class ImClient {
    core;
    connection;
    sendPath;
    receive;
    reads;
    ephemeral;
    constructor(options, loaded, storage, pickStorage) {
        this.core = new Core(settings(options), new LocalStore(loaded, storage, pickStorage));
        const acks = new Acks(this.core, (conv) => this.receive.syncConv(conv));
        this.sendPath = new SendPath(this.core);
        this.receive = new ReceivePath(this.core, acks);
        this.reads = new Reads(this.core);
        this.ephemeral = new Ephemeral(this.core);
        this.connection = new Connection(this.core, this.sendPath, this.receive, acks, this.reads);
    }
    /**
     * Loads the device's state from `options.storage` (the outbox is resent on connect); when `storage` is a
     * function, at the first `authed` instead.
     */
    static async open(options) {
        const s = options.storage;
        if (typeof s === 'function')
            return new ImClient(options, null, null, s);
        return new ImClient(options, await s.load(), s, null);
    }
    on(name, fn) {
        return this.core.listeners.on(name, fn);
    }
    /** Every newly stored event, as an async iterator (`for await (const e of client.stream())`). */
    stream() {
        return this.core.listeners.stream(() => this.core.stopped);
    }
    get connectionState() {
        return this.core.connState;
    }
    /** Who the server said this token is, at the last `authed`; null before. */
    get identity() {
        return this.connection.identity;
    }
    /** The conversations of the last `subbed` answer (head and this device's delivered cursor as then). */
    conversations() {
        return this.receive.conversations();
    }
    /** The highest seq up to which every visible event of `conv` is stored. */
    cursor(conv) {
        return this.core.store.cursor(conv);
    }
    /**
     * The conversations held locally, newest activity first, each with its last stored event, its unread count (as
     * {@link unreadCount}), the user's read cursor (as the server last said) and the cursor. Kept in memory (one
     * small record per conversation), so this reads no events.
     */
    listConversations() {
        return Promise.resolve(this.core.store.summaries());
    }
    /**
     * The unread count of `conv` now (docs/protocol.md, "Read state and unread counts"): the latest read state's
     * `unread` plus the messages (kind `msg`) of other users this device holds with seq above that state's head.
     * The latest state is the one with the highest `read` (for equal `read`, the highest head) from `subbed`, a
     * `readack` or an `unread` push; it is kept in the local store, so the count survives a restart. 0 for a
     * conversation not held.
     */
    unreadCount(conv) {
        return this.core.store.unread(conv);
    }
    /** The sum of {@link unreadCount} over the conversations held. */
    totalUnread() {
        return this.core.store.totalUnread();
    }
    /** The latest read state of `conv` the server gave (`unread` counts the messages up to its `head`); null before the first. */
    readState(conv) {
        return this.core.store.readState(conv);
    }
    /**
     * A page of `conv` from the local store, in seq order: the newest `limit` (default 50) events below
     * `before`, or with no `before` and no `after` the newest overall, or the oldest `limit` above `after`.
     * An indexed read of those events only.
     */
    page(conv, q = {}) {
        const limit = q.limit ?? 50;
        if (!(limit >= 1 && limit <= 1000))
            return Promise.reject(new RangeError(`limit: must be 1 … 1000, got ${limit}`));
        return this.core.store.page(conv, { before: q.before, after: q.after, limit });
    }
    /**
     * Stored events (of `conv`, or of every conversation) whose body contains `text`, ASCII letters matched
     * case-insensitively, in (conv, seq) order, at most `limit` (default 50). A scan of the stored events,
     * not an index: its time grows with the history held (see the README); `signal` stops it.
     */
    search(text, q = {}) {
        const limit = q.limit ?? 50;
        if (!(limit >= 1 && limit <= 1000))
            return Promise.reject(new RangeError(`limit: must be 1 … 1000, got ${limit}`));
        if (text.length === 0)
            return Promise.resolve([]);
        return this.core.store.search(text, { conv: q.conv, limit, signal: q.signal });
    }
    /**
     * Tells the server the user has read `conv` up to `seq` (`read`); resolves with the read state of its `readack`
     * once that state is applied (and durable), which brings {@link unreadCount} down and fires `unread` here, and
     * on the user's other devices by their `unread` push. The server's read cursor only moves up, so a `seq` the
     * applied state covers already resolves at once with that state, without a request. At most one `read` is in
     * flight per conversation: calls meanwhile merge into one follow-up with the highest seq (each resolves when
     * a `readack` covers it). Offline, the read waits for the next connect. Retriable codes are retried with
     * backoff (`INTERNAL` at most `maxInternalErrors` times); a terminal code (`NOT_MEMBER`, `CURSOR_AHEAD` for a
     * seq above the head, ...) rejects with an {@link ImError}; `close()` rejects it with `CLOSED`. Aborting
     * `signal` rejects the call with the signal's reason (a read already on the wire is still applied).
     */
    markRead(conv, seq, options = {}) {
        return this.reads.markRead(conv, seq, options.signal);
    }
    /**
     * Tells the other members' online devices of `conv` that the user is typing (their `typing` event). Call it on
     * every keystroke: a frame is written at most once per 2 s per conversation (`Limits.TYPING_EVERY_MS`), and only
     * while online; true when one was written. One-way and best effort: nothing is stored, resent or answered (a
     * refusal such as `NOT_MEMBER` is not reported).
     */
    typing(conv) {
        return this.ephemeral.typing(conv);
    }
    /**
     * The receipts of the user's own messages at `seqs` of `conv` (1 to 100 distinct seqs), in the order asked: per
     * message, how many of the other members who may see it have read it, and how many of their devices stored it,
     * as the server's cursors say now (docs/protocol.md, "Receipts"; nothing is pushed when they change: ask again).
     * Rejects with an {@link ImError}: the server's code (`NOT_SENDER` for a seq that is not a message of the user's,
     * `NOT_MEMBER`, ...), `TIMEOUT` after `requestTimeoutMs`, `CLOSED` when not online; not retried. Bad `seqs`
     * reject with a `RangeError`.
     */
    receipts(conv, seqs) {
        return this.ephemeral.receipts(conv, seqs);
    }
    /** Entries not yet committed. */
    outbox() {
        return this.core.store.outbox();
    }
    /** Sends the server refused for good (oldest first), kept durably until dismissed; never resent. */
    failed() {
        return this.core.store.failed();
    }
    /** Forgets a failed send (see `failed()`); resolves once that is durable. */
    dismissFailed(cmid) {
        return this.core.store.dismissFailed(cmid);
    }
    /**
     * Connects, authenticates and subscribes; resolves once subscribed (later losses reconnect by themselves).
     * Aborting `signal` before then disconnects (as `disconnect()`) and rejects with the signal's reason.
     */
    connect(options = {}) {
        return this.connection.connect(options.signal);
    }
    /**
     * Sends a message: resolves with the committed seq once the server replied `sent` (possibly after
     * reconnects), rejects with an {@link ImError} on a terminal code or after too many INTERNAL answers.
     * The outbox entry is durable before the first attempt. Aborting `signal` takes the entry out of the outbox
     * (it is never sent again) and rejects with the signal's reason; an attempt already sent may still commit,
     * and then arrives as an event like any other.
     */
    send(conv, body, options = {}) {
        return this.sendPath.send(conv, body, options.signal);
    }
    /**
     * Edits the user's own message `seq` of `conv` to read `body`: through the durable outbox as {@link send} (a fresh
     * cmid, resent with it until answered), resolving with the edit's own seq once `sent`; a terminal refusal
     * (`NOT_A_MESSAGE`, `NOT_SENDER`, `TOO_LATE`, `RECALLED`, ...) rejects with an {@link ImError} and is kept in
     * `failed()` as a send's. The new text shows once the edit arrives as an event (`edited`).
     */
    edit(conv, seq, body, options = {}) {
        return this.sendPath.edit(conv, seq, body, options.signal);
    }
    /**
     * Recalls the user's own message `seq` of `conv` for everyone: as {@link edit}. Once the recall arrives as an event
     * (`recalled`), the message and its edits are kept without their text.
     */
    recall(conv, seq, options = {}) {
        return this.sendPath.recall(conv, seq, options.signal);
    }
    /**
     * The edits of message `seq` of `conv` held locally, oldest first (each an event of kind `edit`: its seq, body and
     * time); empty when it was never edited, or once it was recalled. The message's first text is not kept after an edit.
     */
    editHistory(conv, seq) {
        return this.core.store.editHistory(conv, seq);
    }
    /** Syncs `conv` from the cursor now (as on a gap or hint); resolves true once caught up, false if it gave up. */
    syncNow(conv) {
        return this.receive.syncConv(conv);
    }
    /**
     * Closes the socket and stays offline (state `offline`, no reconnect) until `connect()`; the store, the
     * outbox and `send` keep working (sends go out after the next connect).
     */
    disconnect() {
        this.connection.disconnect();
    }
    /** Closes the connection, stops reconnecting, waits for pending writes to the store and releases it; `connect()` then rejects (`CLOSED`). */
    close() {
        return this.connection.close();
    }
    /** Test hook: stops at once as a killed process would, without flushing anything not yet saved. */
    _crash() {
        this.connection.crash();
    }
}
