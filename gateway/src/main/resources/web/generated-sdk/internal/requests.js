// Generated from client-js/src by `cd client-js && npm run build:web`; do not edit (npm test checks it).
import { ImError } from '../protocol.js';
/** Requests awaiting their reply, matched by rid, each failed with TIMEOUT after `timeoutMs`. */
export class PendingRequests {
    timeoutMs;
    current;
    rid = 0;
    pending = new Map();
    constructor(timeoutMs, current) {
        this.timeoutMs = timeoutMs;
        this.current = current;
    }
    nextRid() {
        return `r${++this.rid}`;
    }
    /** Sends a request and resolves with its reply; rejects with the error frame's code, TIMEOUT or CLOSED. */
    send(ws, frame) {
        return new Promise((resolve, reject) => {
            if (ws !== this.current() || ws.readyState !== 1) {
                reject(new ImError('CLOSED', 'not connected'));
                return;
            }
            const timer = setTimeout(() => {
                this.pending.delete(frame.rid);
                reject(new ImError('TIMEOUT', `no reply to ${frame.t} within ${this.timeoutMs} ms`));
            }, this.timeoutMs);
            this.pending.set(frame.rid, { resolve, reject, timer });
            ws.send(JSON.stringify(frame));
        });
    }
    /**
     * Writes a frame that is answered only when refused (`typing`): no pending entry, no timeout, and the error that
     * may answer it is ignored as a reply nobody waits for. False when not connected (nothing was written).
     */
    write(frame) {
        const ws = this.current();
        if (!ws || ws.readyState !== 1)
            return false;
        ws.send(JSON.stringify(frame));
        return true;
    }
    /** How many requests await their reply. */
    get size() {
        return this.pending.size;
    }
    /** Settles the request a frame answers; false for a frame without a rid (a push, a hint). */
    reply(f) {
        if (!('rid' in f) || f.rid === undefined)
            return false;
        const p = this.pending.get(f.rid);
        if (p) {
            this.pending.delete(f.rid);
            clearTimeout(p.timer);
            if (f.t === 'error')
                p.reject(new ImError(f.code, f.msg));
            else
                p.resolve(f);
        }
        return true;
    }
    /** The connection is gone: every pending request fails with CLOSED. */
    lost() {
        for (const [rid, p] of this.pending) {
            clearTimeout(p.timer);
            p.reject(new ImError('CLOSED', 'connection lost'));
            this.pending.delete(rid);
        }
    }
    clearTimers() {
        for (const p of this.pending.values())
            clearTimeout(p.timer);
    }
    /** Forgets every request unsettled, as a killed process would. */
    drop() {
        this.pending.clear();
    }
}
