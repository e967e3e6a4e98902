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
/** An edit or a recall: an event that changes an earlier message (`ref`) and is never listed as one. */
export function isChange(e) {
    return e.kind === 'edit' || e.kind === 'recall';
}
/**
 * What a store needs to read before it puts `events` ({@link settle}): per conversation, the seqs of the events
 * themselves and of the messages they change, and the range of `ref`s (low … high) whose changes may apply to them.
 */
export function settleNeeds(events) {
    const by = new Map();
    for (const e of events) {
        const target = e.ref ?? e.seq;
        let n = by.get(e.conv);
        if (!n)
            by.set(e.conv, (n = { conv: e.conv, seqs: new Set(), low: target, high: target }));
        n.seqs.add(e.seq).add(target);
        n.low = Math.min(n.low, target);
        n.high = Math.max(n.high, target);
    }
    return [...by.values()].map((n) => ({ conv: n.conv, seqs: [...n.seqs], low: n.low, high: n.high }));
}
/**
 * The rules of edit and recall (docs/protocol.md, "Edit and recall") applied as events are stored, idempotently
 * and in any order: `held` are the stored events {@link settleNeeds} names (those of the seqs and the changes with
 * a ref in the range). Returns what to put (replacing): the events of `incoming` not held, and held events they
 * change. A message shows the text of its edit with the highest seq (`edited` is that edit's seq); once a recall
 * of it is held (or a tombstone came), the message and all its edits are stored with `body` "" and `recalled`,
 * whichever arrives first: a message stored after its recall is stored without its text.
 */
export function settle(incoming, held) {
    const key = (conv, seq) => `${conv}\u0000${seq}`;
    const all = new Map();
    for (const e of held)
        all.set(key(e.conv, e.seq), e);
    const out = new Map();
    const targets = new Set();
    for (const e of incoming) {
        const k = key(e.conv, e.seq);
        if (all.has(k) || out.has(k))
            continue; // held already: kept as it is
        all.set(k, e);
        out.set(k, e);
        if (e.kind === 'msg' || isChange(e))
            targets.add(key(e.conv, e.ref ?? e.seq));
    }
    const changes = new Map();
    for (const e of all.values()) {
        if (!isChange(e))
            continue;
        const k = key(e.conv, e.ref);
        if (!targets.has(k))
            continue;
        const list = changes.get(k);
        if (list)
            list.push(e);
        else
            changes.set(k, [e]);
    }
    const put = (e) => {
        all.set(key(e.conv, e.seq), e);
        out.set(key(e.conv, e.seq), e);
    };
    for (const k of targets) {
        const msg = all.get(k);
        const refs = (changes.get(k) ?? []).sort((a, b) => a.seq - b.seq);
        const recalled = msg?.recalled === true || refs.some((e) => e.kind === 'recall' || e.recalled === true);
        if (recalled) {
            for (const e of [msg, ...refs.filter((r) => r.kind === 'edit')]) {
                if (e && e.kind !== 'recall' && (e.recalled !== true || e.body !== ''))
                    put(tombstone(e));
            }
            continue;
        }
        const latest = refs.filter((e) => e.kind === 'edit').at(-1);
        if (msg?.kind === 'msg' && latest && (msg.edited ?? 0) < latest.seq)
            put({ ...msg, body: latest.body, edited: latest.seq });
    }
    return [...out.values()];
}
/** `last` (a conversation record's) as the store holds that event now: its latest text, or recalled. */
export function asStored(last, stored) {
    if (!stored)
        return last;
    const { edited: _, recalled: __, ...rest } = last;
    return { ...rest, body: stored.body, ...(stored.edited === undefined ? {} : { edited: stored.edited }),
        ...(stored.recalled ? { recalled: true } : {}) };
}
/** A message or edit as kept once recalled: no text. */
function tombstone(e) {
    const { edited: _, ...rest } = e;
    return { ...rest, body: '', recalled: true };
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
        const put = [];
        for (const o of copy(ops)) {
            switch (o.op) {
                case 'events': {
                    const held = [];
                    for (const n of settleNeeds(o.events)) {
                        const m = this.events.get(n.conv);
                        for (const e of m?.values() ?? []) {
                            if (n.seqs.includes(e.seq) || (e.ref !== undefined && e.ref >= n.low && e.ref <= n.high))
                                held.push(e);
                        }
                    }
                    for (const e of settle(o.events, held)) {
                        let m = this.events.get(e.conv);
                        if (!m)
                            this.events.set(e.conv, (m = new Map()));
                        m.set(e.seq, e);
                        put.push(e);
                    }
                    break;
                }
                case 'conv': {
                    const last = o.rec.last && asStored(o.rec.last, this.events.get(o.rec.conv)?.get(o.rec.last.seq));
                    this.convs.set(o.rec.conv, { ...o.rec, last });
                    break;
                }
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
        return copy(put);
    }
    async page(conv, q) {
        const all = [...(this.events.get(conv)?.values() ?? [])].filter((e) => !isChange(e)).sort((a, b) => a.seq - b.seq);
        if (q.after !== undefined)
            return copy(all.filter((e) => e.seq > q.after).slice(0, q.limit));
        const below = q.before === undefined ? all : all.filter((e) => e.seq < q.before);
        return copy(below.slice(Math.max(0, below.length - q.limit)));
    }
    async changes(conv, seq) {
        return copy([...(this.events.get(conv)?.values() ?? [])].filter((e) => e.ref === seq).sort((a, b) => a.seq - b.seq));
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
                if (!isChange(e) && asciiLower(e.body).includes(needle))
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
