// Generated from client-js/src by `cd client-js && npm run build:web`; do not edit (npm test checks it).
/** The client's typed callbacks (`on`) and its async iterators of new events (`stream`). */
export class Listeners {
    fns = new Map();
    /** Per open stream: hand it an event, or wake it to see that the client stopped. */
    streams = [];
    on(name, fn) {
        let set = this.fns.get(name);
        if (!set)
            this.fns.set(name, (set = new Set()));
        set.add(fn);
        return () => set.delete(fn);
    }
    emit(name, ...args) {
        for (const fn of this.fns.get(name) ?? [])
            fn(...args);
    }
    /** A new event is durable: the `event` callbacks, then every stream. */
    stored(e, source) {
        this.emit('event', e, source);
        for (const s of this.streams)
            s.push(e);
    }
    /** Every newly stored event as an async iterator; it ends once `stopped()` holds and its queue is empty. */
    stream(stopped) {
        const queue = [];
        let wake = null;
        const entry = { push: (e) => { queue.push(e); wake?.(); }, wake: () => wake?.() };
        this.streams.push(entry);
        const self = this;
        return {
            [Symbol.asyncIterator]() { return this; },
            async next() {
                while (queue.length === 0) {
                    if (stopped())
                        return { value: undefined, done: true };
                    await new Promise((r) => (wake = r));
                    wake = null;
                }
                return { value: queue.shift(), done: false };
            },
            async return() {
                self.streams = self.streams.filter((p) => p !== entry);
                return { value: undefined, done: true };
            },
        };
    }
    /** Wakes every stream at close: each ends once it has handed out what it holds (no value is added). */
    end() {
        for (const s of this.streams)
            s.wake();
    }
}
