// Generated from client-js/src by `cd client-js && npm run build:web`; do not edit (npm test checks it).
import { Listeners } from './listeners.js';
import { PendingRequests } from './requests.js';
import { Timers, backoff } from './timers.js';
export function settings(options) {
    const ctor = options.webSocket ?? globalThis.WebSocket;
    if (!ctor)
        throw new Error('webSocket: no WebSocket constructor (use the node entry point or pass one)');
    const o = {
        requestTimeoutMs: 5000, reconnectMinMs: 100, reconnectMaxMs: 5000, ackDelayMs: 10, syncLimit: 100,
        maxInternalErrors: 5, autoReconnect: true, ...options, webSocket: ctor,
    };
    if (o.syncLimit < 1 || o.syncLimit > 500)
        throw new Error(`syncLimit: must be 1 … 500, got ${o.syncLimit}`);
    if (o.maxInternalErrors < 1)
        throw new Error(`maxInternalErrors: must be at least 1, got ${o.maxInternalErrors}`);
    return o;
}
/**
 * What the parts of one client share: the settings, the store, the callbacks, the timers, the pending
 * requests, the current socket (null when none) and whether the client is stopped.
 */
export class Core {
    o;
    store;
    ws = null;
    connState = 'idle';
    stopped = false;
    listeners = new Listeners();
    timers = new Timers();
    requests;
    constructor(o, store) {
        this.o = o;
        this.store = store;
        this.requests = new PendingRequests(o.requestTimeoutMs, () => this.ws);
    }
    /** Per conversation, the read cursor and unread count last announced (`unread` listeners). */
    announced = new Map();
    /**
     * Tells the `unread` listeners the read cursor and count of `conv` if they changed since last told; not while
     * a read state is being applied (its count is being read from the store), which tells them once it is done.
     */
    announceUnread(conv) {
        if (this.store.recounting(conv))
            return;
        const read = this.store.readState(conv)?.read ?? 0;
        const unread = this.store.unread(conv);
        const key = `${read}/${unread}`;
        if (this.announced.get(conv) === key)
            return;
        this.announced.set(conv, key);
        this.listeners.emit('unread', conv, read, unread);
    }
    /** The retry and reconnect delay after `attempt` failures. */
    backoff(attempt) {
        return backoff(attempt, this.o.reconnectMinMs, this.o.reconnectMaxMs);
    }
}
