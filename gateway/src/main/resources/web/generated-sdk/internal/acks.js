// Generated from client-js/src by `cd client-js && npm run build:web`; do not edit (npm test checks it).
/**
 * Coalesced acks: only a cursor the storage reported durable is acked, acks of one conversation within
 * `ackDelayMs` go out as one, and an ack refused with CURSOR_AHEAD is owed until a head covers it.
 */
export class Acks {
    core;
    sync;
    /** Per conversation, the device's cursor as the server last reported it. */
    serverDelivered = new Map();
    wanted = new Map();
    owed = new Map(); // refused CURSOR_AHEAD: resend once a head covers it
    timers = new Map();
    internal = new Map();
    /** `sync` starts a sync of a conversation (after a CURSOR_AHEAD). */
    constructor(core, sync) {
        this.core = core;
        this.sync = sync;
    }
    /** The server's cursor of `conv` as last reported; -1 when none was. */
    delivered(conv) {
        return this.serverDelivered.get(conv) ?? -1;
    }
    /** `subbed` reported the device's cursor of `conv`. */
    reportedDelivered(conv, delivered) {
        this.serverDelivered.set(conv, delivered);
    }
    /** The conversation was reset: nothing is wanted or owed for it any more. */
    forget(conv) {
        this.wanted.delete(conv);
        this.owed.delete(conv);
    }
    /** Queues an ack of a durable cursor; acks of one conversation within ackDelayMs go out as one. */
    want(conv, seq) {
        if (seq <= (this.wanted.get(conv) ?? 0) && this.timers.has(conv))
            return;
        this.wanted.set(conv, Math.max(seq, this.wanted.get(conv) ?? 0));
        if (this.timers.has(conv))
            return;
        const t = setTimeout(() => {
            this.timers.delete(conv);
            void this.flush(conv);
        }, this.core.o.ackDelayMs);
        this.timers.set(conv, t);
    }
    /** A head of `conv` was reported (push, hint, sync page, subbed): an owed ack it covers goes out. */
    headReported(conv, head) {
        const owed = this.owed.get(conv);
        if (owed !== undefined && head >= owed) {
            this.owed.delete(conv);
            this.want(conv, Math.max(owed, this.core.store.durable.get(conv) ?? 0));
        }
    }
    clearTimers() {
        for (const t of this.timers.values())
            clearTimeout(t);
        this.timers.clear();
    }
    async flush(conv) {
        const { core } = this;
        const seq = this.wanted.get(conv);
        const ws = core.ws;
        if (seq === undefined || !ws || core.stopped)
            return;
        if (seq <= this.delivered(conv))
            return;
        try {
            const f = await core.requests.send(ws, { t: 'ack', rid: core.requests.nextRid(), conv, seq });
            this.internal.delete(conv);
            if (f.t === 'acked') {
                this.serverDelivered.set(conv, Math.max(f.delivered, this.serverDelivered.get(conv) ?? 0));
                core.listeners.emit('acked', conv, f.delivered);
            }
        }
        catch (e) {
            const err = e;
            if (err.code === 'CURSOR_AHEAD') {
                this.owed.set(conv, seq); // not taken: sent again once a head covers it
                void this.sync(conv);
                return;
            }
            if (err.code === 'CLOSED')
                return; // subbed reports delivered again after the reconnect
            if (!err.retriable)
                return;
            const n = err.code === 'INTERNAL' ? (this.internal.get(conv) ?? 0) + 1 : (this.internal.get(conv) ?? 0);
            if (err.code === 'INTERNAL' && n >= core.o.maxInternalErrors) {
                this.internal.delete(conv);
                core.listeners.emit('ackFailed', conv, seq, err);
                return;
            }
            this.internal.set(conv, n);
            await core.timers.delay(core.backoff(n));
            this.want(conv, seq);
        }
    }
}
