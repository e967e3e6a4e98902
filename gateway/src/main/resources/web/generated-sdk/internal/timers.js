// Generated from client-js/src by `cd client-js && npm run build:web`; do not edit (npm test checks it).
/** The client's timers, so that close and a fatal error can cancel every one. */
export class Timers {
    live = new Set();
    /** Runs `fn` after `ms` unless cleared first. */
    after(ms, fn) {
        const t = setTimeout(() => {
            this.live.delete(t);
            fn();
        }, ms);
        this.live.add(t);
        return t;
    }
    cancel(t) {
        clearTimeout(t);
        this.live.delete(t);
    }
    /** Resolves after `ms`; never, once cleared. */
    delay(ms) {
        return new Promise((resolve) => this.after(ms, resolve));
    }
    clear() {
        for (const t of this.live)
            clearTimeout(t);
        this.live.clear();
    }
}
/** Exponential backoff with jitter: a random delay in [d/2, d], d = min(max, min·2^attempt). */
export function backoff(attempt, minMs, maxMs) {
    const d = Math.min(maxMs, minMs * 2 ** Math.min(attempt, 20));
    return d / 2 + Math.random() * (d / 2);
}
