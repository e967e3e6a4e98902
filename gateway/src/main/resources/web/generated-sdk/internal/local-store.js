// Generated from client-js/src by `cd client-js && npm run build:web`; do not edit (npm test checks it).
import { ImError } from '../protocol.js';
import { isChange, upgradeRecord } from '../storage.js';
/**
 * The device's state in memory is only what is small: per conversation its record (cursor, the seqs held
 * above it, last event, read state, unread count), the outbox and the failed sends. Events stay in the
 * storage and are read by page or search. Every change is written as a batch of ops; batches asked for
 * while one is being written are committed together as the next one (group commit), in order.
 * `durable` holds per conversation the cursor of the last batch the storage reported durable, the
 * only value ever acked. A failed write breaks the store: every later write fails with the same error
 * and `onBroken` stops the client, since memory and storage no longer agree.
 */
export class LocalStore {
    storage;
    pickStorage;
    me = null;
    convs = new Map();
    outboxList = [];
    failedList = [];
    durable = new Map();
    recounts = new Map();
    onBroken = () => { };
    broken = null;
    released = false;
    binding = null;
    queue = [];
    writing = null;
    constructor(loaded, storage, pickStorage) {
        this.storage = storage;
        this.pickStorage = pickStorage;
        if (loaded)
            this.adopt(loaded);
    }
    adopt(l) {
        this.me = l.me;
        this.convs.clear();
        this.durable.clear();
        this.recounts.clear();
        for (const stored of l.convs) {
            const r = upgradeRecord(stored);
            this.convs.set(r.conv, r);
            this.durable.set(r.conv, r.cursor);
        }
        this.outboxList = l.outbox;
        this.failedList = l.failed;
    }
    /** False while the store is still to be picked (at the first `authed`). */
    get ready() {
        return this.storage !== null;
    }
    /** Opens the store `options.storage` picks for this identity and adopts its state (once). */
    bind(who) {
        this.binding ??= this.open(who).catch((e) => {
            this.binding = null; // a later connect() tries again
            throw new ImError('STORAGE', `the local store could not be opened: ${e instanceof Error ? e.message : String(e)}`);
        });
        return this.binding;
    }
    async open(who) {
        const storage = await this.pickStorage(who);
        this.adopt(await storage.load());
        this.storage = storage;
    }
    /** The server said whose token this is: unread counts need to know which events are one's own. */
    async identify(user) {
        if (this.me === user)
            return;
        this.me = user;
        await this.write([{ op: 'me', user }]);
    }
    /**
     * Writes a batch; resolves once it (and every batch asked for before it) is durable, with the events the storage
     * put in the group of batches committed with it, as stored (a message with its latest text, or recalled).
     */
    write(ops) {
        if (this.broken)
            return Promise.reject(this.broken);
        if (this.released)
            return Promise.reject(new ImError('CLOSED', 'the client was closed (its store released)'));
        return new Promise((resolve, reject) => {
            this.queue.push({ ops, resolve, reject });
            this.writing ??= this.drain();
        });
    }
    async drain() {
        const storage = this.storage;
        while (this.queue.length > 0) {
            const group = this.queue.splice(0);
            try {
                if (this.broken)
                    throw this.broken;
                const put = await storage.write(group.flatMap((g) => g.ops));
                this.restate(put);
                for (const g of group)
                    g.resolve(put);
            }
            catch (e) {
                const first = !this.broken;
                this.broken ??= new ImError('STORAGE', `the local store failed: ${e instanceof Error ? e.message : String(e)}`);
                for (const g of group)
                    g.reject(this.broken);
                if (first)
                    this.onBroken(this.broken);
            }
        }
        this.writing = null;
    }
    /** A conversation's last event in memory becomes as the storage now holds it (edited, or recalled without its text). */
    restate(put) {
        for (const e of put) {
            const r = this.convs.get(e.conv);
            if (r?.last?.seq === e.seq)
                r.last = { ...e };
        }
    }
    /** The stored edits of message `seq` of `conv`, oldest first; none once it was recalled (their text is gone). */
    async editHistory(conv, seq) {
        if (!this.storage)
            return [];
        const changes = await this.storage.changes(conv, seq);
        return changes.some((e) => e.kind === 'recall' || e.recalled) ? [] : changes;
    }
    /** Settles once every write asked for so far has (failed ones included). */
    async flushed() {
        while (this.writing)
            await this.writing;
    }
    /** Waits for pending writes, then releases the storage. */
    async close() {
        await this.flushed();
        this.released = true;
        await this.storage?.close();
    }
    /**
     * Test hook of a killed process: batches not yet handed to the storage are never written (a write
     * already handed over completes or not, as the storage's own crash safety decides), and the storage
     * is released as the OS would release a dead process's files.
     */
    abandon() {
        this.broken ??= new ImError('CLOSED', 'the client crashed');
        for (const g of this.queue.splice(0))
            g.reject(this.broken);
        // At once, as the OS releases a dead process's files (a restart in the same process reopens them next).
        this.storage?.close().catch(() => undefined);
    }
    cursor(conv) {
        return this.convs.get(conv)?.cursor ?? 0;
    }
    summaries() {
        const out = [...this.convs.values()].map((r) => ({ conv: r.conv, last: r.last ? { ...r.last } : null, unread: r.unread,
            read: r.readState?.read ?? 0, cursor: r.cursor }));
        // Newest activity first (the last event's time, then its seq); conversations without events last.
        return out.sort((a, b) => (b.last?.at ?? -1) - (a.last?.at ?? -1) || (b.last?.seq ?? -1) - (a.last?.seq ?? -1)
            || (a.conv < b.conv ? -1 : a.conv > b.conv ? 1 : 0)); // not localeCompare: its first call loads the collator (~20 ms)
    }
    page(conv, q) {
        return this.storage ? this.storage.page(conv, q) : Promise.resolve([]);
    }
    search(text, q) {
        return this.storage ? this.storage.search(text, q) : Promise.resolve([]);
    }
    /** The latest read state of `conv` applied (null before the first). */
    readState(conv) {
        const s = this.convs.get(conv)?.readState;
        return s ? { ...s } : null;
    }
    unread(conv) {
        return this.convs.get(conv)?.unread ?? 0;
    }
    /** A read state of `conv` is being applied and the events held above its head are being counted. */
    recounting(conv) {
        return this.recounts.has(conv);
    }
    totalUnread() {
        let n = 0;
        for (const r of this.convs.values())
            n += r.unread;
        return n;
    }
    /**
     * Applies a read state of `conv` from the server unless it is older than the one applied (a lower `read`, or
     * the same `read` with a head not above): the count becomes its `unread` plus the messages of other users
     * held above its `head` (read from the storage only when events above that head are held). Resolves true
     * once the record is durable, false when the state was older and ignored.
     */
    async applyRead(conv, s) {
        const cur = this.convs.get(conv)?.readState;
        if (cur && (s.read < cur.read || (s.read === cur.read && s.head <= cur.head)))
            return false;
        let r = this.convs.get(conv);
        if (!r)
            this.convs.set(conv, (r = newRecord(conv)));
        r.readState = { read: s.read, unread: s.unread, head: s.head };
        r.unread = s.unread;
        const top = r.last?.seq ?? 0;
        if (top <= s.head) {
            this.recounts.delete(conv);
        }
        else {
            const rc = { head: s.head, upTo: top, cursor: r.cursor, held: new Set(r.held) };
            this.recounts.set(conv, rc);
            await this.flushed(); // the events held now are in the storage
            const n = await this.countHeld(conv, rc);
            if (this.recounts.get(conv) !== rc)
                return true; // a later state (or a reset) took over, and writes its own record
            this.recounts.delete(conv);
            r.unread += n;
        }
        await this.write([{ op: 'conv', rec: { ...r, held: [...r.held] } }]);
        return true;
    }
    /** The messages of other users a recount covers: stored, held when it began, with `head < seq <= upTo`. */
    async countHeld(conv, rc) {
        let n = 0;
        let after = rc.head;
        for (;;) {
            const page = await this.page(conv, { after, limit: 500 });
            for (const e of page) {
                if (e.seq > rc.upTo)
                    return n;
                if ((e.seq <= rc.cursor || rc.held.has(e.seq)) && this.countsUnread(e, rc.head))
                    n++;
            }
            if (page.length < 500)
                return n;
            after = page[page.length - 1].seq;
        }
    }
    /** A message of another user above `head` (the applied read state's; 0 when none) counts as unread. */
    countsUnread(e, head) {
        return e.kind === 'msg' && e.sender !== this.me && e.seq > head;
    }
    outbox() {
        return this.outboxList.map((e) => ({ ...e }));
    }
    failed() {
        return this.failedList.map((e) => ({ ...e }));
    }
    async dismissFailed(cmid) {
        const before = this.failedList.length;
        this.failedList = this.failedList.filter((e) => e.cmid !== cmid);
        if (this.failedList.length !== before)
            await this.write([{ op: 'failedDel', cmid }]);
    }
    /**
     * Takes the events above the cursor not yet held and advances the contiguous cursor (to `completeTo` when
     * every visible event up to it is in hand); returns the new events, the new cursor and the ops that store
     * them with the conversation's record (one batch: D3 needs both durable together), or null if nothing changed.
     */
    put(conv, events, completeTo) {
        let r = this.convs.get(conv);
        r ??= newRecord(conv);
        const held = new Set(r.held);
        const fresh = [];
        for (const e of events) {
            if (e.seq > r.cursor && !held.has(e.seq)) {
                held.add(e.seq);
                fresh.push(e);
            }
        }
        let c = r.cursor;
        while (held.has(c + 1))
            c++;
        if (completeTo !== null)
            c = Math.max(c, completeTo);
        if (fresh.length === 0 && c === r.cursor)
            return null;
        let counted = 0;
        for (const e of fresh) {
            if (this.countsUnread(e, r.readState?.head ?? 0))
                counted++;
            if (!isChange(e) && (!r.last || e.seq > r.last.seq))
                r.last = e; // as stored once written (restate)
        }
        r.unread += counted;
        r.cursor = c;
        r.held = [...held].filter((s) => s > c).sort((a, b) => a - b);
        this.convs.set(conv, r);
        const ops = [];
        if (fresh.length > 0)
            ops.push({ op: 'events', events: fresh });
        ops.push({ op: 'conv', rec: { ...r, held: [...r.held] } });
        return { fresh, cursor: c, counted, ops };
    }
    madeDurable(conv, cursor) {
        this.durable.set(conv, Math.max(cursor, this.durable.get(conv) ?? 0));
    }
    /** Drops a conversation's events and record; returns the op that does it in the storage. */
    drop(conv) {
        this.convs.delete(conv);
        this.durable.delete(conv);
        this.recounts.delete(conv);
        return { op: 'dropConv', conv };
    }
}
function newRecord(conv) {
    return { conv, cursor: 0, held: [], last: null, readState: null, unread: 0 };
}
