// Generated from client-js/src by `cd client-js && npm run build:web`; do not edit (npm test checks it).
import { ImError, checkBody } from '../protocol.js';
/**
 * The durable outbox (messages, edits and recalls): an entry is saved before its first attempt and resent with the same cmid (after a
 * lost reply, a retriable code or a reconnect) until `sent` or a terminal code; INTERNAL at most
 * `maxInternalErrors` times. Entries refused for good move to `failed`.
 */
export class SendPath {
    core;
    waiters = new Map();
    inflight = new Set();
    constructor(core) {
        this.core = core;
    }
    async send(conv, body, signal) {
        checkBody(body);
        return this.enqueue({ conv, body }, signal);
    }
    /** An edit of message `seq`: through the outbox as a send, answered by `sent` with the edit's own seq. */
    async edit(conv, seq, body, signal) {
        checkBody(body);
        checkTarget(seq);
        return this.enqueue({ conv, body, target: seq }, signal);
    }
    /** A recall of message `seq`: through the outbox as a send, answered by `sent` with the recall's own seq. */
    async recall(conv, seq, signal) {
        checkTarget(seq);
        return this.enqueue({ conv, body: '', target: seq, recall: true }, signal);
    }
    async enqueue(request, signal) {
        signal?.throwIfAborted();
        const { store } = this.core;
        if (!store.ready)
            throw new ImError('CLOSED', 'no store yet: it is chosen at the first authed');
        const entry = { cmid: randomId(), ...request, internalErrors: 0 };
        store.outboxList.push(entry);
        await store.write([{ op: 'outboxPut', entry: { ...entry } }]);
        this.core.listeners.emit('queued', { ...entry });
        const result = new Promise((resolve, reject) => this.waiters.set(entry.cmid, { resolve, reject }));
        if (signal) {
            const onAbort = () => void this.cancel(entry, signal.reason);
            if (signal.aborted)
                onAbort();
            else {
                signal.addEventListener('abort', onAbort, { once: true });
                void result.then(() => signal.removeEventListener('abort', onAbort), () => signal.removeEventListener('abort', onAbort));
            }
        }
        if (this.core.connState === 'online')
            this.attempt(entry);
        return result;
    }
    /**
     * A cancelled send: the entry leaves the outbox (durably) and is never resent; the promise rejects with
     * the signal's reason. An attempt already on the wire may still commit (the server cannot be asked to
     * forget it): the message then arrives as an event like any other.
     */
    async cancel(entry, reason) {
        const { store } = this.core;
        const i = store.outboxList.indexOf(entry);
        if (i < 0)
            return; // settled already
        store.outboxList.splice(i, 1);
        const w = this.waiters.get(entry.cmid);
        this.waiters.delete(entry.cmid);
        try {
            await store.write([{ op: 'outboxDel', cmid: entry.cmid }]);
        }
        finally {
            w?.reject(reason);
        }
    }
    /** Online again: every pending entry goes out (an entry already in flight is left to its attempt). */
    resendAll() {
        for (const e of this.core.store.outboxList)
            this.attempt(e);
    }
    /** The connection is gone: nothing is in flight any more. */
    lost() {
        this.inflight.clear();
    }
    attempt(entry) {
        const { core } = this;
        const ws = core.ws;
        if (!ws || this.inflight.has(entry.cmid))
            return;
        this.inflight.add(entry.cmid);
        const frame = frameOf(entry, core.requests.nextRid());
        core.requests.send(ws, frame).then((f) => {
            this.inflight.delete(entry.cmid);
            if (f.t !== 'sent')
                return;
            const target = entry.target === undefined ? {} : { target: entry.target };
            void this.settle(entry, null, { conv: f.conv, cmid: entry.cmid, seq: f.seq, mid: f.mid, dup: f.dup, ...target });
        }, async (err) => {
            this.inflight.delete(entry.cmid);
            if (err.code === 'CLOSED')
                return; // resent after the reconnect
            if (!core.store.outboxList.includes(entry))
                return; // cancelled while in flight: never written back
            if (!err.retriable) {
                await this.settle(entry, err, null);
                return;
            }
            if (err.code === 'INTERNAL') {
                entry.internalErrors++;
                if (entry.internalErrors >= core.o.maxInternalErrors) {
                    await this.settle(entry, err, null);
                    return;
                }
                await core.store.write([{ op: 'outboxPut', entry: { ...entry } }]);
            }
            // TIMEOUT (a lost reply), UNAVAILABLE, RATE_LIMITED, INTERNAL below the cap: same cmid, later.
            await core.timers.delay(err.code === 'TIMEOUT' ? 0 : core.backoff(entry.internalErrors));
            if (!core.stopped && core.store.outboxList.includes(entry))
                this.attempt(entry);
        });
    }
    async settle(entry, err, ok) {
        const { store } = this.core;
        const i = store.outboxList.indexOf(entry);
        if (i < 0)
            return;
        store.outboxList.splice(i, 1);
        const ops = [{ op: 'outboxDel', cmid: entry.cmid }];
        if (err) {
            // An edit refused because its message was recalled keeps no text of it (a recall leaves none behind).
            const f = { ...entry, ...(err.code === 'RECALLED' ? { body: '' } : {}), code: err.code, msg: err.message };
            store.failedList.push(f);
            ops.push({ op: 'failedPut', entry: { ...f } });
        }
        await store.write(ops);
        const w = this.waiters.get(entry.cmid);
        this.waiters.delete(entry.cmid);
        if (ok) {
            this.core.listeners.emit('sent', ok);
            w?.resolve(ok);
        }
        else {
            this.core.listeners.emit('sendFailed', { ...entry }, err);
            w?.reject(err);
        }
    }
}
/** The request an outbox entry is: a `send`, an `edit` or a `recall` (with its target's seq). */
function frameOf(entry, rid) {
    const base = { rid, conv: entry.conv, cmid: entry.cmid };
    if (entry.target === undefined)
        return { t: 'send', ...base, body: entry.body };
    return entry.recall ? { t: 'recall', ...base, seq: entry.target } : { t: 'edit', ...base, seq: entry.target, body: entry.body };
}
/** The seq of the message an edit or recall changes: a positive safe integer. */
function checkTarget(seq) {
    if (!Number.isSafeInteger(seq) || seq < 1)
        throw new ImError('BAD_FIELD', `seq: must be a positive integer, got ${seq}`);
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
