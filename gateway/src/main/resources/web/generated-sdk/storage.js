// Generated from client-js/src by `cd client-js && npm run build:web`; do not edit (npm test checks it).
/**
 * A record as a store written before read state existed (`readMark`, the app's local mark, instead of
 * `readState`) becomes one without a read state: its count stands until the server's first read state,
 * which then is the truth (whatever the local mark said).
 */
export function upgradeRecord(r) {
    if (r.readState !== undefined && r.readMark === undefined)
        return r;
    const { readMark: _, ...rest } = r;
    return { ...rest, readState: r.readState ?? null, unread: r.unread ?? 0 };
}
/** Lower-cases A–Z only, as SQLite's LIKE and lower() do, so that every store matches the same way. */
export function asciiLower(s) {
    return s.replace(/[A-Z]/g, (c) => c.toLowerCase());
}
/** A store in memory: nothing survives the process. For tests and throw-away clients. */
export class MemoryStorage {
    me = null;
    events = new Map();
    convs = new Map();
    outbox = new Map();
    failed = new Map();
    async load() {
        return copy({ me: this.me, convs: [...this.convs.values()], outbox: [...this.outbox.values()], failed: [...this.failed.values()] });
    }
    async write(ops) {
        for (const o of copy(ops)) {
            switch (o.op) {
                case 'events':
                    for (const e of o.events) {
                        let m = this.events.get(e.conv);
                        if (!m)
                            this.events.set(e.conv, (m = new Map()));
                        if (!m.has(e.seq))
                            m.set(e.seq, e);
                    }
                    break;
                case 'conv':
                    this.convs.set(o.rec.conv, o.rec);
                    break;
                case 'dropConv':
                    this.convs.delete(o.conv);
                    this.events.delete(o.conv);
                    break;
                case 'outboxPut':
                    this.outbox.set(o.entry.cmid, o.entry);
                    break;
                case 'outboxDel':
                    this.outbox.delete(o.cmid);
                    break;
                case 'failedPut':
                    this.failed.set(o.entry.cmid, o.entry);
                    break;
                case 'failedDel':
                    this.failed.delete(o.cmid);
                    break;
                case 'me':
                    this.me = o.user;
                    break;
            }
        }
    }
    async page(conv, q) {
        const all = [...(this.events.get(conv)?.values() ?? [])].sort((a, b) => a.seq - b.seq);
        if (q.after !== undefined)
            return copy(all.filter((e) => e.seq > q.after).slice(0, q.limit));
        const below = q.before === undefined ? all : all.filter((e) => e.seq < q.before);
        return copy(below.slice(Math.max(0, below.length - q.limit)));
    }
    async search(text, q) {
        const needle = asciiLower(text);
        const out = [];
        const convs = q.conv === undefined ? [...this.events.keys()].sort() : [q.conv];
        for (const c of convs) {
            q.signal?.throwIfAborted();
            for (const e of [...(this.events.get(c)?.values() ?? [])].sort((a, b) => a.seq - b.seq)) {
                if (out.length >= q.limit)
                    return copy(out);
                if (asciiLower(e.body).includes(needle))
                    out.push(e);
            }
        }
        return copy(out);
    }
    async close() { }
}
function copy(x) {
    return JSON.parse(JSON.stringify(x));
}
