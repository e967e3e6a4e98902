// Generated from client-js/src by `cd client-js && npm run build:web`; do not edit (npm test checks it).
/**
 * The receive path: pushes, catch-up and sync pages are stored idempotently by (conv, seq) with a contiguous
 * cursor; after `subbed`, the conversations behind their head are caught up together by `catchup` pages, and
 * one still behind after that (or every one, when `catchup` fails) syncs on its own; a gap or a hint syncs
 * from the cursor, paging while `more`; a stored event is announced and acked only once durable.
 */
export class ReceivePath {
    core;
    acks;
    subbed = [];
    syncing = new Map(); // conv -> its running sync
    constructor(core, acks) {
        this.core = core;
        this.acks = acks;
    }
    /** The conversations of the last `subbed` answer. */
    conversations() {
        return this.subbed.map((c) => ({ ...c }));
    }
    /**
     * The `subbed` answer (every page of it): conversations behind their head are caught up by `catchup`, then
     * any still behind synced, and once every one of them caught up (or gave up) `recovery` reports whether the
     * device holds everything up to the heads `subbed` gave.
     */
    onSubbed(convs, reconnect) {
        const { store } = this.core;
        this.subbed = convs.map((c) => ({ ...c }));
        const reset = [];
        for (const c of convs) {
            if (c.head < store.cursor(c.conv)) {
                this.resetConv(c.conv, c.head);
                reset.push(c.conv);
            }
        }
        this.core.listeners.emit('subscribed', this.conversations());
        for (const c of convs) {
            if (c.read !== undefined && c.unread !== undefined)
                void this.onReadState(c.conv, { read: c.read, unread: c.unread, head: c.head });
        }
        const behind = [];
        for (const c of convs) {
            this.acks.reportedDelivered(c.conv, c.delivered);
            this.acks.headReported(c.conv, c.head);
            if (c.head > store.cursor(c.conv))
                behind.push(c);
            const d = store.durable.get(c.conv) ?? 0; // not cursor(): pushes may be stored but not durable yet
            if (d > c.delivered)
                this.acks.want(c.conv, d);
        }
        const caughtUp = behind.length === 0 ? Promise.resolve() : this.catchUp().catch(() => undefined);
        void caughtUp.then(() => Promise.all(behind.map((c) => c.head > store.cursor(c.conv) ? this.syncConv(c.conv).then((ok) => [c.conv, ok]) : Promise.resolve([c.conv, true])))).then((done) => {
            if (this.core.stopped)
                return;
            const failed = done.filter(([, ok]) => !ok).map(([c]) => c);
            const synced = done.filter(([, ok]) => ok).map(([c]) => c);
            this.core.listeners.emit('recovery', { reconnect, recovered: failed.length === 0 && reset.length === 0, synced, failed, reset });
        });
    }
    /** A read state from `subbed` or an `unread` push (another device of the user moved the read cursor). */
    async onReadState(conv, state) {
        try {
            if (await this.core.store.applyRead(conv, state))
                this.core.announceUnread(conv);
        }
        catch {
            // the store failed: it is broken and the client stopped (see LocalStore)
        }
    }
    onHint(conv, head, why) {
        this.core.listeners.emit('hint', conv, head, why);
        this.acks.headReported(conv, head);
        if (head > this.core.store.cursor(conv))
            void this.syncConv(conv);
    }
    async onPush(ev) {
        const before = this.core.store.cursor(ev.conv);
        this.acks.headReported(ev.conv, ev.seq);
        if (ev.seq <= before)
            return; // a duplicate
        try {
            await this.store(ev.conv, [ev], null, 'push');
        }
        catch {
            return; // the store failed: it is broken and the client stopped (see LocalStore)
        }
        if (ev.seq > before + 1 && this.core.store.cursor(ev.conv) < ev.seq)
            void this.syncConv(ev.conv); // a gap
    }
    /**
     * Syncs from the cursor, paging while `more`; one round at a time per conversation (a call during a
     * round asks for one more round and shares its result). Resolves true once a page said `more:false`
     * with nothing asked since, false if the sync gave up (connection lost, a terminal code, the INTERNAL cap).
     */
    syncConv(conv) {
        const running = this.syncing.get(conv);
        if (running) {
            running.again = true;
            return running.done;
        }
        const round = { again: false, done: Promise.resolve(false) };
        this.syncing.set(conv, round);
        round.done = this.syncRounds(conv, round)
            .catch(() => false) // the store failed: it is broken and the client stopped (see LocalStore)
            .finally(() => { if (this.syncing.get(conv) === round)
            this.syncing.delete(conv); });
        return round.done;
    }
    async syncRounds(conv, round) {
        const { core } = this;
        const internal = { n: 0 };
        let after = core.store.cursor(conv);
        for (;;) {
            const f = await this.pageRequest((rid) => ({ t: 'sync', rid, conv, after, limit: core.o.syncLimit }), internal);
            if (f === null)
                return false;
            if (f === undefined)
                continue;
            if (f.t !== 'synced')
                return false;
            const last = f.events.reduce((m, e) => Math.max(m, e.seq), after);
            // more:false: every visible event up to head is in hand, so the cursor may pass invisible seqs.
            await this.store(conv, f.events, f.more ? null : f.head, 'sync');
            this.acks.headReported(conv, f.head);
            if (!f.more) {
                if (!round.again)
                    return true;
                round.again = false;
                after = core.store.cursor(conv);
                continue;
            }
            after = last;
        }
    }
    /**
     * Pages `catchup` while `more`: what the device has not acknowledged, across its conversations, each page
     * stored range by range (a range that starts at or below the cursor completes the conversation up to its
     * `upTo`, as a `synced` page without `more` does). True once a page said `more:false`; false if it gave up
     * (connection lost, a terminal code such as an older server's `UNKNOWN_TYPE`, the INTERNAL cap).
     */
    async catchUp() {
        const internal = { n: 0 };
        let after;
        for (;;) {
            const f = await this.pageRequest((rid) => ({ t: 'catchup', rid, ...(after === undefined ? {} : { after }) }), internal);
            if (f === null)
                return false;
            if (f === undefined)
                continue;
            if (f.t !== 'caughtup')
                return false;
            const byConv = new Map();
            for (const e of f.events) {
                const list = byConv.get(e.conv);
                if (list)
                    list.push(e);
                else
                    byConv.set(e.conv, [e]);
            }
            for (const r of f.convs)
                await this.storeRange(r, byConv.get(r.conv) ?? []);
            if (!f.more || f.after === undefined)
                return true;
            after = f.after;
        }
    }
    /**
     * One request of a paging loop: its reply; `null` when the loop gives up (no connection, the client stopped,
     * a terminal code, the INTERNAL cap counted in `internal`); `undefined` after a retriable failure's backoff.
     */
    async pageRequest(make, internal) {
        const { core } = this;
        const ws = core.ws;
        if (!ws || core.stopped)
            return null;
        try {
            return await core.requests.send(ws, make(core.requests.nextRid()));
        }
        catch (e) {
            const err = e;
            if (!err.retriable || err.code === 'CLOSED' || (err.code === 'INTERNAL' && ++internal.n >= core.o.maxInternalErrors))
                return null;
            await core.timers.delay(core.backoff(internal.n));
            return undefined;
        }
    }
    /** One conversation's part of a `caughtup` page. */
    async storeRange(r, events) {
        const contiguous = this.core.store.cursor(r.conv) >= r.after; // else (an older local state): stored, and synced after
        await this.store(r.conv, events, contiguous ? r.upTo : null, 'sync');
        this.acks.headReported(r.conv, r.upTo);
    }
    /** The connection is gone: no sync is running any more. */
    lost() {
        this.syncing.clear();
    }
    /** Drops a conversation's local events and cursor: the server's head is below them (see the `reset` event). */
    resetConv(conv, head) {
        const op = this.core.store.drop(conv);
        this.acks.forget(conv);
        this.core.store.write([op]).catch(() => undefined); // a failed write breaks the store and stops the client
        this.core.listeners.emit('reset', conv, head);
        this.core.announceUnread(conv);
    }
    /**
     * A new event as stored (a message stored after its recall has no text): `event`, then for an edit that is now
     * its message's text `edited`, for a recall `recalled`.
     */
    announce(e, stored, source) {
        const { listeners } = this.core;
        listeners.stored(e, source);
        if (e.kind === 'edit' && stored.get(e.ref)?.edited === e.seq)
            listeners.emit('edited', e.conv, e.ref, e.body, e.seq);
        if (e.kind === 'recall')
            listeners.emit('recalled', e.conv, e.ref);
    }
    /** Stores new events, advances the contiguous cursor, waits for durability, then emits and acks. */
    async store(conv, events, completeTo, source) {
        const { store } = this.core;
        const put = store.put(conv, events, completeTo);
        if (!put)
            return;
        const stored = new Map((await store.write(put.ops)).filter((e) => e.conv === conv).map((e) => [e.seq, e]));
        store.madeDurable(conv, put.cursor);
        put.fresh.sort((a, b) => a.seq - b.seq);
        for (const e of put.fresh)
            this.announce(stored.get(e.seq) ?? e, stored, source);
        if (put.counted > 0)
            this.core.announceUnread(conv);
        if (put.cursor > this.acks.delivered(conv))
            this.acks.want(conv, put.cursor); // durable before this line
    }
}
