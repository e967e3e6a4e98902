// Generated from client-js/src by `cd client-js && npm run build:web`; do not edit (npm test checks it).
import { CLOSES, ImError, checkBody, parseServerFrame } from './protocol.js';
import { emptyState } from './storage.js';
/**
 * A device's connection to the platform with the guarantees of docs/protocol.md, as the Java SDK:
 * `send` writes a durable outbox entry first and resends it with the same cmid until `sent` or a
 * terminal error; events are kept by (conv, seq) with a contiguous cursor; a gap or a hint syncs;
 * acks go out only after the store is durable, coalesced; reconnect with backoff and jitter;
 * INTERNAL retried at most `maxInternalErrors` times.
 */
export class ImClient {
    state;
    storage;
    pickStorage;
    o;
    listeners = new Map();
    ws = null;
    rid = 0;
    connState = 'idle';
    stopped = false;
    offlineWanted = false; // disconnect(): no reconnect until connect()
    who = null;
    binding = null;
    subbed = [];
    reconnectAttempt = 0;
    reconnectTimer = null;
    pending = new Map();
    waiters = new Map();
    inflight = new Set();
    syncing = new Map(); // conv -> another round wanted
    serverDelivered = new Map();
    /** Per conversation, the cursor of the last state known durable: the only value ever acked. */
    durable = new Map();
    ackWanted = new Map();
    ackOwed = new Map(); // refused CURSOR_AHEAD: resend once a head covers it
    ackTimers = new Map();
    ackInternal = new Map();
    subInternal = 0;
    saveChain = Promise.resolve();
    timers = new Set();
    streams = [];
    firstOnline = null;
    constructor(options, state, storage, pickStorage) {
        this.state = state;
        this.storage = storage;
        this.pickStorage = pickStorage;
        const ctor = options.webSocket ?? globalThis.WebSocket;
        if (!ctor)
            throw new Error('webSocket: no WebSocket constructor (use the node entry point or pass one)');
        this.o = {
            requestTimeoutMs: 5000, reconnectMinMs: 100, reconnectMaxMs: 5000, ackDelayMs: 10, syncLimit: 100,
            maxInternalErrors: 5, autoReconnect: true, ...options, webSocket: ctor,
        };
        if (this.o.syncLimit < 1 || this.o.syncLimit > 500)
            throw new Error(`syncLimit: must be 1 … 500, got ${this.o.syncLimit}`);
        if (this.o.maxInternalErrors < 1)
            throw new Error(`maxInternalErrors: must be at least 1, got ${this.o.maxInternalErrors}`);
        this.adopt(state);
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
    adopt(state) {
        state.failed ??= [];
        this.state = state;
        this.durable.clear();
        for (const [conv, c] of Object.entries(state.cursors))
            this.durable.set(conv, c);
    }
    on(name, fn) {
        let set = this.listeners.get(name);
        if (!set)
            this.listeners.set(name, (set = new Set()));
        set.add(fn);
        return () => set.delete(fn);
    }
    emit(name, ...args) {
        for (const fn of this.listeners.get(name) ?? [])
            fn(...args);
    }
    /** Every newly stored event, as an async iterator (`for await (const e of client.stream())`). */
    stream() {
        const queue = [];
        let wake = null;
        const push = (e) => { queue.push(e); wake?.(); };
        this.streams.push(push);
        const self = this;
        return {
            [Symbol.asyncIterator]() { return this; },
            async next() {
                while (queue.length === 0) {
                    if (self.stopped)
                        return { value: undefined, done: true };
                    await new Promise((r) => (wake = r));
                    wake = null;
                }
                return { value: queue.shift(), done: false };
            },
            async return() {
                self.streams = self.streams.filter((p) => p !== push);
                return { value: undefined, done: true };
            },
        };
    }
    get connectionState() {
        return this.connState;
    }
    /** Who the server said this token is, at the last `authed`; null before. */
    get identity() {
        return this.who ? { ...this.who } : null;
    }
    /** The conversations of the last `subbed` answer (head and this device's delivered cursor as then). */
    conversations() {
        return this.subbed.map((c) => ({ ...c }));
    }
    /** The highest seq up to which every visible event of `conv` is stored. */
    cursor(conv) {
        return this.state.cursors[conv] ?? 0;
    }
    /** The stored events of `conv` in seq order. */
    events(conv) {
        return Object.values(this.state.events[conv] ?? {}).sort((a, b) => a.seq - b.seq);
    }
    /** Entries not yet committed. */
    outbox() {
        return this.state.outbox.map((e) => ({ ...e }));
    }
    /** Sends the server refused for good (oldest first), kept durably until dismissed; never resent. */
    failed() {
        return (this.state.failed ?? []).map((e) => ({ ...e }));
    }
    /** Forgets a failed send (see `failed()`); resolves once that is durable. */
    async dismissFailed(cmid) {
        const before = this.state.failed.length;
        this.state.failed = this.state.failed.filter((e) => e.cmid !== cmid);
        if (this.state.failed.length !== before)
            await this.persist();
    }
    /** Connects, authenticates and subscribes; resolves once subscribed (later losses reconnect by themselves). */
    connect() {
        if (this.connState === 'online')
            return Promise.resolve();
        this.stopped = false;
        this.offlineWanted = false;
        const p = new Promise((resolve, reject) => (this.firstOnline = { resolve, reject }));
        if (!this.ws)
            this.openSocket();
        return p;
    }
    /**
     * Sends a message: resolves with the committed seq once the server replied `sent` (possibly after
     * reconnects), rejects with an {@link ImError} on a terminal code or after too many INTERNAL answers.
     * The outbox entry is durable before the first attempt.
     */
    async send(conv, body) {
        checkBody(body);
        if (!this.storage)
            throw new ImError('CLOSED', 'no store yet: it is chosen at the first authed');
        const entry = { cmid: randomId(), conv, body, internalErrors: 0 };
        this.state.outbox.push(entry);
        await this.persist();
        this.emit('queued', { ...entry });
        const result = new Promise((resolve, reject) => this.waiters.set(entry.cmid, { resolve, reject }));
        if (this.connState === 'online')
            this.attemptSend(entry);
        return result;
    }
    /** Syncs `conv` from the cursor now (as on a gap or hint). */
    syncNow(conv) {
        return this.syncConv(conv);
    }
    /**
     * Closes the socket and stays offline (state `offline`, no reconnect) until `connect()`; the store, the
     * outbox and `send` keep working (sends go out after the next connect).
     */
    disconnect() {
        this.offlineWanted = true;
        if (this.reconnectTimer) {
            clearTimeout(this.reconnectTimer);
            this.timers.delete(this.reconnectTimer);
            this.reconnectTimer = null;
        }
        this.firstOnline?.reject(new ImError('CLOSED', 'disconnected'));
        this.firstOnline = null;
        const ws = this.ws;
        if (ws) {
            ws.close(1000);
            this.onClosed(ws, 1000); // now, not at the close event: pending requests settle at once
        }
        else if (!this.stopped) {
            this.setState('offline');
        }
    }
    /** Closes the connection, stops reconnecting and waits for pending writes to the store. */
    async close() {
        this.stopped = true;
        this.clearTimers();
        this.setState('closed');
        this.ws?.close(1000);
        this.ws = null;
        for (const w of this.streams)
            w(undefined);
        await this.saveChain;
    }
    /** Test hook: stops at once as a killed process would, without flushing anything not yet saved. */
    _crash() {
        this.stopped = true;
        this.clearTimers();
        const ws = this.ws;
        this.ws = null;
        if (ws) {
            ws.onclose = ws.onmessage = ws.onerror = null;
            ws.close();
        }
        this.pending.clear();
        this.connState = 'closed';
    }
    // --- connection -------------------------------------------------------------------------------
    setState(s) {
        if (this.connState === s)
            return;
        this.connState = s;
        this.emit('state', s);
    }
    openSocket() {
        this.setState('connecting');
        const ws = new this.o.webSocket(this.o.url);
        this.ws = ws;
        ws.onopen = () => void this.handshake(ws);
        ws.onmessage = (m) => this.onText(ws, String(m.data));
        ws.onerror = () => { };
        ws.onclose = (ev) => this.onClosed(ws, ev.code);
    }
    async handshake(ws) {
        try {
            const authed = await this.request(ws, { t: 'auth', rid: this.nextRid(), token: this.o.token });
            if (authed.t === 'authed')
                this.who = { user: authed.user, device: authed.device, epoch: authed.epoch };
            if (!this.storage)
                await this.bindStorage();
            if (ws !== this.ws)
                return; // lost meanwhile: the reconnect starts over
            this.reconnectAttempt = 0;
            this.setState('online');
            for (const e of this.state.outbox)
                this.attemptSend(e);
            await this.subscribe(ws);
            this.firstOnline?.resolve(); // subscribed: pushes from here on reach this client
            this.firstOnline = null;
        }
        catch (e) {
            const err = e;
            if (err.code === 'BAD_TOKEN' || err.code === 'STALE_INSTALL' || err.code === 'STORAGE')
                this.fail(err);
            else if (ws === this.ws)
                ws.close(); // reconnect
        }
    }
    /** Opens the store `options.storage` picks for this identity and adopts its state (once). */
    bindStorage() {
        this.binding ??= this.openStorage().catch((e) => {
            this.binding = null; // a later connect() tries again
            throw new ImError('STORAGE', `the local store could not be opened: ${e instanceof Error ? e.message : String(e)}`);
        });
        return this.binding;
    }
    async openStorage() {
        const storage = await this.pickStorage(this.who);
        this.adopt((await storage.load()) ?? emptyState());
        this.storage = storage;
    }
    async subscribe(ws) {
        while (ws === this.ws && !this.stopped) {
            try {
                const f = await this.request(ws, { t: 'sub', rid: this.nextRid() });
                this.subInternal = 0;
                if (f.t === 'subbed')
                    this.onSubbed(f.convs);
                return;
            }
            catch (e) {
                const err = e;
                if (!err.retriable || err.code === 'CLOSED') {
                    if (err.code !== 'CLOSED')
                        this.emit('subscribeFailed', err);
                    return;
                }
                if (err.code === 'INTERNAL' && ++this.subInternal >= this.o.maxInternalErrors) {
                    this.subInternal = 0;
                    this.emit('subscribeFailed', err);
                    return;
                }
                await this.delay(this.backoff(this.subInternal));
            }
        }
    }
    fail(err) {
        this.stopped = true;
        this.clearTimers();
        const ws = this.ws;
        if (ws) { // the server closes after a refused token; after STORAGE the socket is still open
            ws.close(1000);
            this.onClosed(ws, 1000);
        }
        this.setState('failed');
        this.firstOnline?.reject(err);
        this.firstOnline = null;
        this.emit('fatal', err);
    }
    onClosed(ws, code) {
        if (ws !== this.ws)
            return;
        this.ws = null;
        for (const [rid, p] of this.pending) {
            clearTimeout(p.timer);
            p.reject(new ImError('CLOSED', 'connection lost'));
            this.pending.delete(rid);
        }
        this.inflight.clear();
        this.syncing.clear();
        if (this.stopped)
            return;
        if (code === CLOSES.BAD_TOKEN || code === CLOSES.STALE_INSTALL) {
            this.fail(new ImError(code === CLOSES.BAD_TOKEN ? 'BAD_TOKEN' : 'STALE_INSTALL', `closed with ${code}`));
            return;
        }
        this.setState('offline');
        if (!this.o.autoReconnect || this.offlineWanted)
            return;
        const delayMs = this.backoff(this.reconnectAttempt++);
        const t = setTimeout(() => {
            this.timers.delete(t);
            this.reconnectTimer = null;
            if (!this.stopped && !this.ws)
                this.openSocket();
        }, delayMs);
        this.timers.add(t);
        this.reconnectTimer = t;
        this.emit('reconnecting', this.reconnectAttempt, delayMs, code);
    }
    /** Exponential backoff with jitter: a random delay in [d/2, d], d = min(max, min·2^attempt). */
    backoff(attempt) {
        const d = Math.min(this.o.reconnectMaxMs, this.o.reconnectMinMs * 2 ** Math.min(attempt, 20));
        return d / 2 + Math.random() * (d / 2);
    }
    delay(ms) {
        return new Promise((resolve) => {
            const t = setTimeout(() => { this.timers.delete(t); resolve(); }, ms);
            this.timers.add(t);
        });
    }
    clearTimers() {
        for (const t of this.timers)
            clearTimeout(t);
        this.timers.clear();
        for (const t of this.ackTimers.values())
            clearTimeout(t);
        this.ackTimers.clear();
        for (const p of this.pending.values())
            clearTimeout(p.timer);
    }
    nextRid() {
        return `r${++this.rid}`;
    }
    /** Sends a request and resolves with its reply; rejects with the error frame's code, TIMEOUT or CLOSED. */
    request(ws, frame) {
        return new Promise((resolve, reject) => {
            if (ws !== this.ws || ws.readyState !== 1) {
                reject(new ImError('CLOSED', 'not connected'));
                return;
            }
            const timer = setTimeout(() => {
                this.pending.delete(frame.rid);
                reject(new ImError('TIMEOUT', `no reply to ${frame.t} within ${this.o.requestTimeoutMs} ms`));
            }, this.o.requestTimeoutMs);
            this.pending.set(frame.rid, { resolve, reject, timer });
            ws.send(JSON.stringify(frame));
        });
    }
    onText(ws, text) {
        if (ws !== this.ws)
            return;
        const f = parseServerFrame(text);
        if (!f || this.o.dropIncoming?.(f))
            return;
        if ('rid' in f && f.rid !== undefined) {
            const p = this.pending.get(f.rid);
            if (p) {
                this.pending.delete(f.rid);
                clearTimeout(p.timer);
                if (f.t === 'error')
                    p.reject(new ImError(f.code, f.msg));
                else
                    p.resolve(f);
            }
            return;
        }
        switch (f.t) {
            case 'event':
                void this.onPush(f.ev);
                break;
            case 'hint':
                this.emit('hint', f.conv, f.head, f.why);
                this.headReported(f.conv, f.head);
                if (f.head > this.cursor(f.conv))
                    void this.syncConv(f.conv);
                break;
            case 'error': // unsolicited (STALE_INSTALL before the close)
                if (f.code === 'STALE_INSTALL' || f.code === 'BAD_TOKEN')
                    this.fail(new ImError(f.code, f.msg));
                break;
            default:
                break;
        }
    }
    // --- outbox -----------------------------------------------------------------------------------
    attemptSend(entry) {
        const ws = this.ws;
        if (!ws || this.inflight.has(entry.cmid))
            return;
        this.inflight.add(entry.cmid);
        const frame = { t: 'send', rid: this.nextRid(), conv: entry.conv, cmid: entry.cmid, body: entry.body };
        this.request(ws, frame).then((f) => {
            this.inflight.delete(entry.cmid);
            if (f.t !== 'sent')
                return;
            void this.settle(entry, null, { conv: f.conv, cmid: entry.cmid, seq: f.seq, mid: f.mid, dup: f.dup });
        }, async (err) => {
            this.inflight.delete(entry.cmid);
            if (err.code === 'CLOSED')
                return; // resent after the reconnect
            if (!err.retriable) {
                await this.settle(entry, err, null);
                return;
            }
            if (err.code === 'INTERNAL') {
                entry.internalErrors++;
                if (entry.internalErrors >= this.o.maxInternalErrors) {
                    await this.settle(entry, err, null);
                    return;
                }
                await this.persist();
            }
            // TIMEOUT (a lost reply), UNAVAILABLE, RATE_LIMITED, INTERNAL below the cap: same cmid, later.
            await this.delay(err.code === 'TIMEOUT' ? 0 : this.backoff(entry.internalErrors));
            if (!this.stopped && this.state.outbox.includes(entry))
                this.attemptSend(entry);
        });
    }
    async settle(entry, err, ok) {
        const i = this.state.outbox.indexOf(entry);
        if (i < 0)
            return;
        this.state.outbox.splice(i, 1);
        if (err)
            this.state.failed.push({ ...entry, code: err.code, msg: err.message });
        await this.persist();
        const w = this.waiters.get(entry.cmid);
        this.waiters.delete(entry.cmid);
        if (ok) {
            this.emit('sent', ok);
            w?.resolve(ok);
        }
        else {
            this.emit('sendFailed', { ...entry }, err);
            w?.reject(err);
        }
    }
    // --- receiving --------------------------------------------------------------------------------
    onSubbed(convs) {
        this.subbed = convs.map((c) => ({ ...c }));
        for (const c of convs)
            if (c.head < this.cursor(c.conv))
                this.resetConv(c.conv, c.head);
        this.emit('subscribed', this.conversations());
        for (const c of convs) {
            this.serverDelivered.set(c.conv, c.delivered);
            this.headReported(c.conv, c.head);
            if (c.head > this.cursor(c.conv))
                void this.syncConv(c.conv);
            const d = this.durable.get(c.conv) ?? 0; // not cursor(): pushes may be stored but not durable yet
            if (d > c.delivered)
                this.wantAck(c.conv, d);
        }
    }
    /** Drops a conversation's local events and cursor: the server's head is below them (see the `reset` event). */
    resetConv(conv, head) {
        delete this.state.events[conv];
        delete this.state.cursors[conv];
        this.durable.delete(conv);
        this.ackWanted.delete(conv);
        this.ackOwed.delete(conv);
        this.persist().catch(() => undefined); // a failed save is retried by the next one, which holds this too
        this.emit('reset', conv, head);
    }
    async onPush(ev) {
        const before = this.cursor(ev.conv);
        this.headReported(ev.conv, ev.seq);
        if (ev.seq <= before)
            return; // a duplicate
        await this.store(ev.conv, [ev], null, 'push');
        if (ev.seq > before + 1 && this.cursor(ev.conv) < ev.seq)
            void this.syncConv(ev.conv); // a gap
    }
    /** Syncs from the cursor, paging while `more`; one round at a time per conversation. */
    async syncConv(conv) {
        if (this.syncing.has(conv)) {
            this.syncing.set(conv, true);
            return;
        }
        this.syncing.set(conv, false);
        let internal = 0;
        try {
            let after = this.cursor(conv);
            for (;;) {
                const ws = this.ws;
                if (!ws || this.stopped)
                    return;
                let f;
                try {
                    f = await this.request(ws, { t: 'sync', rid: this.nextRid(), conv, after, limit: this.o.syncLimit });
                }
                catch (e) {
                    const err = e;
                    if (!err.retriable || err.code === 'CLOSED' || (err.code === 'INTERNAL' && ++internal >= this.o.maxInternalErrors))
                        return;
                    await this.delay(this.backoff(internal));
                    continue;
                }
                if (f.t !== 'synced')
                    return;
                const last = f.events.reduce((m, e) => Math.max(m, e.seq), after);
                // more:false: every visible event up to head is in hand, so the cursor may pass invisible seqs.
                await this.store(conv, f.events, f.more ? null : f.head, 'sync');
                this.headReported(conv, f.head);
                if (!f.more) {
                    if (this.syncing.get(conv)) {
                        this.syncing.set(conv, false);
                        after = this.cursor(conv);
                        continue;
                    }
                    return;
                }
                after = last;
            }
        }
        finally {
            this.syncing.delete(conv);
        }
    }
    /** Stores new events, advances the contiguous cursor, waits for durability, then emits and acks. */
    async store(conv, events, completeTo, source) {
        const byseq = (this.state.events[conv] ??= {});
        const fresh = [];
        for (const e of events) {
            if (e.seq > this.cursor(conv) && !byseq[e.seq]) {
                byseq[e.seq] = e;
                fresh.push(e);
            }
        }
        let c = this.cursor(conv);
        while (byseq[c + 1])
            c++;
        if (completeTo !== null)
            c = Math.max(c, completeTo);
        const moved = c > this.cursor(conv);
        this.state.cursors[conv] = c;
        if (fresh.length === 0 && !moved)
            return;
        await this.persist();
        this.durable.set(conv, Math.max(c, this.durable.get(conv) ?? 0));
        fresh.sort((a, b) => a.seq - b.seq);
        for (const e of fresh) {
            this.emit('event', e, source);
            for (const s of this.streams)
                s(e);
        }
        if (c > (this.serverDelivered.get(conv) ?? -1))
            this.wantAck(conv, c); // c was durable before this line
    }
    // --- acks -------------------------------------------------------------------------------------
    /** Queues an ack of a durable cursor; acks of one conversation within ackDelayMs go out as one. */
    wantAck(conv, seq) {
        if (seq <= (this.ackWanted.get(conv) ?? 0) && this.ackTimers.has(conv))
            return;
        this.ackWanted.set(conv, Math.max(seq, this.ackWanted.get(conv) ?? 0));
        if (this.ackTimers.has(conv))
            return;
        const t = setTimeout(() => {
            this.ackTimers.delete(conv);
            void this.flushAck(conv);
        }, this.o.ackDelayMs);
        this.ackTimers.set(conv, t);
    }
    async flushAck(conv) {
        const seq = this.ackWanted.get(conv);
        const ws = this.ws;
        if (seq === undefined || !ws || this.stopped)
            return;
        if (seq <= (this.serverDelivered.get(conv) ?? -1))
            return;
        try {
            const f = await this.request(ws, { t: 'ack', rid: this.nextRid(), conv, seq });
            this.ackInternal.delete(conv);
            if (f.t === 'acked') {
                this.serverDelivered.set(conv, Math.max(f.delivered, this.serverDelivered.get(conv) ?? 0));
                this.emit('acked', conv, f.delivered);
            }
        }
        catch (e) {
            const err = e;
            if (err.code === 'CURSOR_AHEAD') {
                this.ackOwed.set(conv, seq); // not taken: sent again once a head covers it
                void this.syncConv(conv);
                return;
            }
            if (err.code === 'CLOSED')
                return; // subbed reports delivered again after the reconnect
            if (!err.retriable)
                return;
            const n = err.code === 'INTERNAL' ? (this.ackInternal.get(conv) ?? 0) + 1 : (this.ackInternal.get(conv) ?? 0);
            if (err.code === 'INTERNAL' && n >= this.o.maxInternalErrors) {
                this.ackInternal.delete(conv);
                this.emit('ackFailed', conv, seq, err);
                return;
            }
            this.ackInternal.set(conv, n);
            await this.delay(this.backoff(n));
            this.wantAck(conv, seq);
        }
    }
    headReported(conv, head) {
        const owed = this.ackOwed.get(conv);
        if (owed !== undefined && head >= owed) {
            this.ackOwed.delete(conv);
            this.wantAck(conv, Math.max(owed, this.durable.get(conv) ?? 0));
        }
    }
    // --- storage ----------------------------------------------------------------------------------
    /** Saves a snapshot of the state taken now; resolves once it (and every earlier one) is durable. */
    persist() {
        const snapshot = JSON.parse(JSON.stringify(this.state));
        const storage = this.storage;
        const next = this.saveChain.then(() => storage.save(snapshot));
        this.saveChain = next.catch(() => undefined);
        return next;
    }
}
/** 128 random bits as hex; getRandomValues works on plain http too (randomUUID needs a secure context). */
function randomId() {
    const c = globalThis.crypto;
    const b = new Uint8Array(16);
    if (c?.getRandomValues)
        c.getRandomValues(b);
    else
        for (let i = 0; i < b.length; i++)
            b[i] = Math.floor(Math.random() * 256);
    return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}
