// Generated from client-js/src by `cd client-js && npm run build:web`; do not edit (npm test checks it).
import { ImError } from '../protocol.js';
import { emptyState } from '../storage.js';
/**
 * The device's state (outbox, failed sends, events by (conv, seq), contiguous cursors) and its storage:
 * every change is saved as one snapshot, in order; `durable` holds per conversation the cursor of the
 * last state the storage reported durable, the only value ever acked.
 */
export class LocalStore {
    storage;
    pickStorage;
    state;
    durable = new Map();
    binding = null;
    saveChain = Promise.resolve();
    constructor(state, storage, pickStorage) {
        this.storage = storage;
        this.pickStorage = pickStorage;
        this.adopt(state);
    }
    adopt(state) {
        state.failed ??= [];
        this.state = state;
        this.durable.clear();
        for (const [conv, c] of Object.entries(state.cursors))
            this.durable.set(conv, c);
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
        this.adopt((await storage.load()) ?? emptyState());
        this.storage = storage;
    }
    /** Saves a snapshot of the state taken now; resolves once it (and every earlier one) is durable. */
    persist() {
        const snapshot = JSON.parse(JSON.stringify(this.state));
        const storage = this.storage;
        const next = this.saveChain.then(() => storage.save(snapshot));
        this.saveChain = next.catch(() => undefined);
        return next;
    }
    /** Settles once every save asked for so far has (failed saves included). */
    flushed() {
        return this.saveChain;
    }
    cursor(conv) {
        return this.state.cursors[conv] ?? 0;
    }
    events(conv) {
        return Object.values(this.state.events[conv] ?? {}).sort((a, b) => a.seq - b.seq);
    }
    outbox() {
        return this.state.outbox.map((e) => ({ ...e }));
    }
    failed() {
        return (this.state.failed ?? []).map((e) => ({ ...e }));
    }
    async dismissFailed(cmid) {
        const before = this.state.failed.length;
        this.state.failed = this.state.failed.filter((e) => e.cmid !== cmid);
        if (this.state.failed.length !== before)
            await this.persist();
    }
    /**
     * Puts the events above the cursor not yet held and advances the contiguous cursor (to `completeTo` when
     * every visible event up to it is in hand); returns the new events and cursor, or null if nothing changed.
     * Not saved yet: the caller persists, then calls `madeDurable`.
     */
    put(conv, events, completeTo) {
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
            return null;
        return { fresh, cursor: c };
    }
    madeDurable(conv, cursor) {
        this.durable.set(conv, Math.max(cursor, this.durable.get(conv) ?? 0));
    }
    /** Drops a conversation's events and cursor (not saved yet). */
    drop(conv) {
        delete this.state.events[conv];
        delete this.state.cursors[conv];
        this.durable.delete(conv);
    }
}
