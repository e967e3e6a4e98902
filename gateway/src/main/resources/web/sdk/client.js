// Generated from client-js/src by `cd client-js && npm run build:web`; do not edit (npm test checks it).
import { emptyState } from './storage.js';
import { Acks } from './internal/acks.js';
import { Connection } from './internal/connection.js';
import { Core, settings } from './internal/core.js';
import { LocalStore } from './internal/local-store.js';
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
    constructor(options, state, storage, pickStorage) {
        this.core = new Core(settings(options), new LocalStore(state, storage, pickStorage));
        const acks = new Acks(this.core, (conv) => this.receive.syncConv(conv));
        this.sendPath = new SendPath(this.core);
        this.receive = new ReceivePath(this.core, acks);
        this.connection = new Connection(this.core, this.sendPath, this.receive, acks);
    }
    /**
     * Loads the device's state from `options.storage` (the outbox is resent on connect); when `storage` is a
     * function, at the first `authed` instead.
     */
    static async open(options) {
        const s = options.storage;
        if (typeof s === 'function')
            return new ImClient(options, emptyState(), null, s);
        return new ImClient(options, (await s.load()) ?? emptyState(), s, null);
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
    /** The stored events of `conv` in seq order. */
    events(conv) {
        return this.core.store.events(conv);
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
    /** Connects, authenticates and subscribes; resolves once subscribed (later losses reconnect by themselves). */
    connect() {
        return this.connection.connect();
    }
    /**
     * Sends a message: resolves with the committed seq once the server replied `sent` (possibly after
     * reconnects), rejects with an {@link ImError} on a terminal code or after too many INTERNAL answers.
     * The outbox entry is durable before the first attempt.
     */
    send(conv, body) {
        return this.sendPath.send(conv, body);
    }
    /** Syncs `conv` from the cursor now (as on a gap or hint). */
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
    /** Closes the connection, stops reconnecting and waits for pending writes to the store. */
    close() {
        return this.connection.close();
    }
    /** Test hook: stops at once as a killed process would, without flushing anything not yet saved. */
    _crash() {
        this.connection.crash();
    }
}
