import type { Event, ReadState } from './protocol.js';

/**
 * One request written before its first attempt and kept until `sent` or a terminal error: a message (`send`),
 * or, with `edit` (the seq of the message), an edit (`body` is the new text) or a recall (`recall: true`, `body` `""`).
 */
export interface OutboxEntry {
  cmid: string;
  conv: string;
  body: string;
  /** An edit or a recall of the message with this seq. */
  target?: number;
  /** A recall (of `target`). */
  recall?: boolean;
  /** INTERNAL answers so far; the entry is dropped at maxInternalErrors. */
  internalErrors: number;
}

/** An outbox entry the server refused for good (a terminal code, or too many INTERNAL answers); never resent. */
export interface FailedEntry extends OutboxEntry {
  code: string;
  msg: string;
}

/**
 * What the device keeps per conversation besides its events, small and kept in memory: the contiguous
 * cursor, the seqs stored above it (out of order, waiting for a gap to fill), the event with the highest
 * seq, the latest read state the server gave and the unread count now.
 */
export interface ConvRecord {
  conv: string;
  cursor: number;
  held: number[];
  last: Event | null;
  /**
   * The latest read state from the server (`subbed`, `readack`, `unread` push): the highest `read`, for equal
   * `read` the highest `head`. Null before the first (or in a store written before read state existed).
   */
  readState: ReadState | null;
  /**
   * The unread count now: `readState.unread` plus the messages (kind `msg`) of other users held with seq above
   * `readState.head`; with no read state yet, the messages of other users stored since the record began.
   */
  unread: number;
}

/**
 * A record as a store written before read state existed (`readMark`, the app's local mark, instead of
 * `readState`) becomes one without a read state: its count stands until the server's first read state,
 * which then is the truth (whatever the local mark said).
 */
export function upgradeRecord(r: ConvRecord & { readMark?: number }): ConvRecord {
  if (r.readState !== undefined && r.readMark === undefined) return r;
  const { readMark: _, ...rest } = r;
  return { ...rest, readState: r.readState ?? null, unread: r.unread ?? 0 };
}

/** What a store holds besides the events, read when it is opened: O(conversations + pending sends). */
export interface Loaded {
  /** The user the store belongs to (from `authed`); null before the first. */
  me: string | null;
  convs: ConvRecord[];
  /** Oldest first. */
  outbox: OutboxEntry[];
  /** Oldest first. */
  failed: FailedEntry[];
}

/** One change; a batch of them is written atomically (all or none) by {@link Storage.write}. */
export type StoreOp =
  | { op: 'events'; events: Event[] }          // put by (conv, seq) as {@link settle} says; an event already held is kept as it is
  | { op: 'conv'; rec: ConvRecord }            // replaces the conversation's record, its `last` as stored (see {@link Storage.write})
  | { op: 'dropConv'; conv: string }           // deletes the conversation's events and record
  | { op: 'outboxPut'; entry: OutboxEntry }    // adds, or updates in place (keeping its position)
  | { op: 'outboxDel'; cmid: string }
  | { op: 'failedPut'; entry: FailedEntry }
  | { op: 'failedDel'; cmid: string }
  | { op: 'me'; user: string };

/** A page of one conversation: up to `limit` events with seq below `before` (the newest of them) or above `after` (the oldest). */
export interface PageQuery { before?: number; after?: number; limit: number }
export interface SearchQuery { conv?: string; limit: number; signal?: AbortSignal }

/**
 * Where a client keeps its state, record by record. `write` resolves only once its batch is durable
 * (SQLite commits with synchronous=FULL on Node; IndexedDB transactions with strict durability in
 * browsers): the client writes the outbox entry before a first send and acks only a cursor whose batch
 * `write` reported durable. Batches are handed over one at a time, in order.
 */
export interface Storage {
  /** Opens the store and reads what it keeps besides the events; throws (never returns empty) on a damaged store. */
  load(): Promise<Loaded>;
  /**
   * Applies the ops in order, atomically; resolves once durable with the events the batch put (new or changed, as
   * stored: {@link settle}). A `conv` op's `last` is written as that event is stored then (a recalled one without
   * its body).
   */
  write(ops: StoreOp[]): Promise<Event[]>;
  /**
   * Events of `conv` other than edits and recalls (a message as its latest text, or recalled) in seq order: the
   * newest `limit` below `before` (or overall), or the oldest `limit` above `after`.
   */
  page(conv: string, q: PageQuery): Promise<Event[]>;
  /**
   * Events other than edits and recalls whose body contains `text` (ASCII letters case-insensitively), in (conv,
   * seq) order; a scan of what is stored.
   */
  search(text: string, q: SearchQuery): Promise<Event[]>;
  /** The stored edits and recalls of the message `seq` of `conv`, in seq order. */
  changes(conv: string, seq: number): Promise<Event[]>;
  /** Releases the store (files, connections); the client calls it from `close()`. */
  close(): Promise<void>;
}

/** An edit or a recall: an event that changes an earlier message (`ref`) and is never listed as one. */
export function isChange(e: Event): boolean {
  return e.kind === 'edit' || e.kind === 'recall';
}

/**
 * What a store needs to read before it puts `events` ({@link settle}): per conversation, the seqs of the events
 * themselves and of the messages they change, and the range of `ref`s (low … high) whose changes may apply to them.
 */
export function settleNeeds(events: Event[]): Array<{ conv: string; seqs: number[]; low: number; high: number }> {
  const by = new Map<string, { conv: string; seqs: Set<number>; low: number; high: number }>();
  for (const e of events) {
    const target = e.ref ?? e.seq;
    let n = by.get(e.conv);
    if (!n) by.set(e.conv, (n = { conv: e.conv, seqs: new Set(), low: target, high: target }));
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
export function settle(incoming: Event[], held: Event[]): Event[] {
  const key = (conv: string, seq: number) => `${conv}\u0000${seq}`;
  const all = new Map<string, Event>();
  for (const e of held) all.set(key(e.conv, e.seq), e);
  const out = new Map<string, Event>();
  const targets = new Set<string>();
  for (const e of incoming) {
    const k = key(e.conv, e.seq);
    if (all.has(k) || out.has(k)) continue;   // held already: kept as it is
    all.set(k, e);
    out.set(k, e);
    if (e.kind === 'msg' || isChange(e)) targets.add(key(e.conv, e.ref ?? e.seq));
  }
  const changes = new Map<string, Event[]>();
  for (const e of all.values()) {
    if (!isChange(e)) continue;
    const k = key(e.conv, e.ref!);
    if (!targets.has(k)) continue;
    const list = changes.get(k);
    if (list) list.push(e);
    else changes.set(k, [e]);
  }
  const put = (e: Event) => {
    all.set(key(e.conv, e.seq), e);
    out.set(key(e.conv, e.seq), e);
  };
  for (const k of targets) {
    const msg = all.get(k);
    const refs = (changes.get(k) ?? []).sort((a, b) => a.seq - b.seq);
    const recalled = msg?.recalled === true || refs.some((e) => e.kind === 'recall' || e.recalled === true);
    if (recalled) {
      for (const e of [msg, ...refs.filter((r) => r.kind === 'edit')]) {
        if (e && e.kind !== 'recall' && (e.recalled !== true || e.body !== '')) put(tombstone(e));
      }
      continue;
    }
    const latest = refs.filter((e) => e.kind === 'edit').at(-1);
    if (msg?.kind === 'msg' && latest && (msg.edited ?? 0) < latest.seq) put({ ...msg, body: latest.body, edited: latest.seq });
  }
  return [...out.values()];
}

/** `last` (a conversation record's) as the store holds that event now: its latest text, or recalled. */
export function asStored(last: Event, stored: Event | undefined): Event {
  if (!stored) return last;
  const { edited: _, recalled: __, ...rest } = last;
  return { ...rest, body: stored.body, ...(stored.edited === undefined ? {} : { edited: stored.edited }),
    ...(stored.recalled ? { recalled: true } : {}) };
}

/** A message or edit as kept once recalled: no text. */
function tombstone(e: Event): Event {
  const { edited: _, ...rest } = e;
  return { ...rest, body: '', recalled: true };
}

/** Lower-cases A–Z only, as SQLite's LIKE and lower() do, so that every store matches the same way. */
export function asciiLower(s: string): string {
  return s.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

/** A store in memory: nothing survives the process. For tests and throw-away clients. */
export class MemoryStorage implements Storage {
  private me: string | null = null;
  private readonly events = new Map<string, Map<number, Event>>();
  private readonly convs = new Map<string, ConvRecord>();
  private readonly outbox = new Map<string, OutboxEntry>();
  private readonly failed = new Map<string, FailedEntry>();

  async load(): Promise<Loaded> {
    return copy({ me: this.me, convs: [...this.convs.values()], outbox: [...this.outbox.values()], failed: [...this.failed.values()] });
  }

  async write(ops: StoreOp[]): Promise<Event[]> {
    const put: Event[] = [];
    for (const o of copy(ops)) {
      switch (o.op) {
        case 'events': {
          const held: Event[] = [];
          for (const n of settleNeeds(o.events)) {
            const m = this.events.get(n.conv);
            for (const e of m?.values() ?? []) {
              if (n.seqs.includes(e.seq) || (e.ref !== undefined && e.ref >= n.low && e.ref <= n.high)) held.push(e);
            }
          }
          for (const e of settle(o.events, held)) {
            let m = this.events.get(e.conv);
            if (!m) this.events.set(e.conv, (m = new Map()));
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
        case 'dropConv': this.convs.delete(o.conv); this.events.delete(o.conv); break;
        case 'outboxPut': this.outbox.set(o.entry.cmid, o.entry); break;
        case 'outboxDel': this.outbox.delete(o.cmid); break;
        case 'failedPut': this.failed.set(o.entry.cmid, o.entry); break;
        case 'failedDel': this.failed.delete(o.cmid); break;
        case 'me': this.me = o.user; break;
      }
    }
    return copy(put);
  }

  async page(conv: string, q: PageQuery): Promise<Event[]> {
    const all = [...(this.events.get(conv)?.values() ?? [])].filter((e) => !isChange(e)).sort((a, b) => a.seq - b.seq);
    if (q.after !== undefined) return copy(all.filter((e) => e.seq > q.after!).slice(0, q.limit));
    const below = q.before === undefined ? all : all.filter((e) => e.seq < q.before!);
    return copy(below.slice(Math.max(0, below.length - q.limit)));
  }

  async changes(conv: string, seq: number): Promise<Event[]> {
    return copy([...(this.events.get(conv)?.values() ?? [])].filter((e) => e.ref === seq).sort((a, b) => a.seq - b.seq));
  }

  async search(text: string, q: SearchQuery): Promise<Event[]> {
    const needle = asciiLower(text);
    const out: Event[] = [];
    const convs = q.conv === undefined ? [...this.events.keys()].sort() : [q.conv];
    for (const c of convs) {
      q.signal?.throwIfAborted();
      for (const e of [...(this.events.get(c)?.values() ?? [])].sort((a, b) => a.seq - b.seq)) {
        if (out.length >= q.limit) return copy(out);
        if (!isChange(e) && asciiLower(e.body).includes(needle)) out.push(e);
      }
    }
    return copy(out);
  }

  async close(): Promise<void> {}
}

function copy<T>(x: T): T {
  return JSON.parse(JSON.stringify(x)) as T;
}
