// Generated from client-js/src by `cd client-js && npm run build:web`; do not edit (npm test checks it).
import { ImError, Limits } from '../protocol.js';
/**
 * At most one `read` per conversation is sent per this interval: the calls made meanwhile merge into the follow-up,
 * sent when it has passed. A user reading as messages arrive in a busy group then costs the server one read a second
 * per device, not one per message (as the Java SDK, `ReadPath.READ_INTERVAL_NANOS`).
 */
export const READ_INTERVAL_MS = 1000;
/**
 * `markRead`: coalesced like acks, at most one `read` in flight per conversation and one per `READ_INTERVAL_MS`;
 * calls meanwhile merge into one follow-up with the highest seq. A call the applied read state covers already resolves at once. Retriable codes
 * are retried with backoff (INTERNAL at most `maxInternalErrors` times); a read not answered when the connection
 * is lost goes out again after the next connect (unless the server's read state covers it by then). A terminal
 * code rejects the calls it answers; `close()` and a fatal error reject every call still waiting.
 */
export class Reads {
    core;
    slots = new Map();
    constructor(core) {
        this.core = core;
    }
    markRead(conv, seq, signal) {
        if (!Number.isSafeInteger(seq) || seq < 0 || seq > Limits.MAX_SEQ) {
            return Promise.reject(new RangeError(`seq: must be an integer 0 … ${Limits.MAX_SEQ}, got ${seq}`));
        }
        if (signal?.aborted)
            return Promise.reject(signal.reason);
        const { core } = this;
        if (core.stopped)
            return Promise.reject(new ImError('CLOSED', 'the client is closed or stopped'));
        if (!core.store.ready)
            return Promise.reject(new ImError('CLOSED', 'no store yet: it is chosen at the first authed'));
        const known = core.store.readState(conv);
        if (known && seq <= known.read)
            return Promise.resolve({ conv, ...known });
        return new Promise((resolve, reject) => {
            const w = { resolve, reject };
            let slot = this.slots.get(conv);
            if (!slot)
                this.slots.set(conv, (slot = { wire: null, next: null, backoff: false, internal: 0 }));
            slot.next ??= { seq, waiters: new Set() };
            slot.next.seq = Math.max(slot.next.seq, seq);
            slot.next.waiters.add(w);
            if (signal) {
                const onAbort = () => this.cancel(conv, w, signal.reason);
                signal.addEventListener('abort', onAbort, { once: true });
                const done = () => signal.removeEventListener('abort', onAbort);
                w.resolve = (s) => { done(); resolve(s); };
                w.reject = (e) => { done(); reject(e); };
            }
            void this.flush(conv);
        });
    }
    /** Online again: every read waiting goes out. */
    resume() {
        for (const conv of this.slots.keys())
            void this.flush(conv);
    }
    /** The client stopped (`close()`, a fatal error): every call still waiting is rejected with `err`. */
    stop(err) {
        for (const slot of this.slots.values()) {
            for (const w of [...(slot.wire?.waiters ?? []), ...(slot.next?.waiters ?? [])])
                w.reject(err);
        }
        this.slots.clear();
    }
    /** An aborted call: rejected with the signal's reason; a read no call waits for any more is not sent. */
    cancel(conv, w, reason) {
        const slot = this.slots.get(conv);
        if (!slot)
            return;
        for (const wanted of [slot.wire, slot.next]) {
            if (wanted?.waiters.delete(w))
                w.reject(reason);
        }
        if (slot.next && slot.next.waiters.size === 0)
            slot.next = null; // one on the wire is answered all the same
        if (!slot.wire && !slot.next && !slot.backoff)
            this.slots.delete(conv);
    }
    async flush(conv) {
        const { core } = this;
        const slot = this.slots.get(conv);
        if (!slot || slot.wire || slot.backoff || !slot.next)
            return;
        const known = core.store.readState(conv);
        if (known && slot.next.seq <= known.read) { // covered (by a push, or a read of another call): nothing to send
            for (const w of slot.next.waiters)
                w.resolve({ conv, ...known });
            slot.next = null;
            this.slots.delete(conv);
            return;
        }
        const ws = core.ws;
        if (!ws || core.stopped || core.connState !== 'online')
            return; // sent by resume() once online
        const wanted = slot.next;
        slot.wire = wanted;
        slot.next = null;
        const sentAt = performance.now();
        let retry = false;
        try {
            const f = await core.requests.send(ws, { t: 'read', rid: core.requests.nextRid(), conv, seq: wanted.seq });
            slot.internal = 0;
            if (f.t !== 'readack')
                throw new ImError('INTERNAL', `a ${f.t} answered a read`);
            const state = { read: f.read, unread: f.unread, head: f.head };
            if (await core.store.applyRead(f.conv, state))
                core.announceUnread(f.conv);
            for (const w of wanted.waiters)
                w.resolve({ conv, ...state });
        }
        catch (e) {
            const err = e;
            if (err.code === 'CLOSED' || (err.retriable && !(err.code === 'INTERNAL' && ++slot.internal >= core.o.maxInternalErrors))) {
                retry = err.code !== 'CLOSED';
                this.requeue(slot, wanted); // sent again after a backoff, or after the reconnect
            }
            else {
                slot.internal = 0;
                for (const w of wanted.waiters)
                    w.reject(err);
            }
        }
        finally {
            slot.wire = null;
        }
        // After a retriable failure its backoff; else the rest of the interval, the slot kept so that a call meanwhile waits too.
        // (A timer may fire a little early by performance.now(): waited for again until the end has passed.)
        const end = retry ? performance.now() + core.backoff(slot.internal) : sentAt + READ_INTERVAL_MS;
        for (let left = end - performance.now(); left > 0; left = end - performance.now()) {
            slot.backoff = true;
            await core.timers.delay(left);
        }
        slot.backoff = false;
        if (this.slots.get(conv) !== slot)
            return; // stopped meanwhile
        if (!slot.next)
            this.slots.delete(conv);
        else
            void this.flush(conv);
    }
    /** A read that did not get its answer goes back in front of the follow-up, merged with it. */
    requeue(slot, wanted) {
        if (wanted.waiters.size === 0 && !slot.next)
            return;
        slot.next ??= { seq: wanted.seq, waiters: new Set() };
        slot.next.seq = Math.max(slot.next.seq, wanted.seq);
        for (const w of wanted.waiters)
            slot.next.waiters.add(w);
    }
}
