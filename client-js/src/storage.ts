import type { Event, ReadState } from './protocol.js';

/** One message written before its first attempt and kept until `sent` or a terminal error. */
export interface OutboxEntry {
  cmid: string;
  conv: string;
  body: string;
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
  | { op: 'events'; events: Event[] }          // put by (conv, seq); an event already held is kept as it is
  | { op: 'conv'; rec: ConvRecord }            // replaces the conversation's record
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
  /** Applies the ops in order, atomically; resolves once durable. */
  write(ops: StoreOp[]): Promise<void>;
  /** Events of `conv` in seq order: the newest `limit` below `before` (or overall), or the oldest `limit` above `after`. */
  page(conv: string, q: PageQuery): Promise<Event[]>;
  /** Events whose body contains `text` (ASCII letters case-insensitively), in (conv, seq) order; a scan of what is stored. */
  search(text: string, q: SearchQuery): Promise<Event[]>;
  /** Releases the store (files, connections); the client calls it from `close()`. */
  close(): Promise<void>;
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

  async write(ops: StoreOp[]): Promise<void> {
    for (const o of copy(ops)) {
      switch (o.op) {
        case 'events':
          for (const e of o.events) {
            let m = this.events.get(e.conv);
            if (!m) this.events.set(e.conv, (m = new Map()));
            if (!m.has(e.seq)) m.set(e.seq, e);
          }
          break;
        case 'conv': this.convs.set(o.rec.conv, o.rec); break;
        case 'dropConv': this.convs.delete(o.conv); this.events.delete(o.conv); break;
        case 'outboxPut': this.outbox.set(o.entry.cmid, o.entry); break;
        case 'outboxDel': this.outbox.delete(o.cmid); break;
        case 'failedPut': this.failed.set(o.entry.cmid, o.entry); break;
        case 'failedDel': this.failed.delete(o.cmid); break;
        case 'me': this.me = o.user; break;
      }
    }
  }

  async page(conv: string, q: PageQuery): Promise<Event[]> {
    const all = [...(this.events.get(conv)?.values() ?? [])].sort((a, b) => a.seq - b.seq);
    if (q.after !== undefined) return copy(all.filter((e) => e.seq > q.after!).slice(0, q.limit));
    const below = q.before === undefined ? all : all.filter((e) => e.seq < q.before!);
    return copy(below.slice(Math.max(0, below.length - q.limit)));
  }

  async search(text: string, q: SearchQuery): Promise<Event[]> {
    const needle = asciiLower(text);
    const out: Event[] = [];
    const convs = q.conv === undefined ? [...this.events.keys()].sort() : [q.conv];
    for (const c of convs) {
      q.signal?.throwIfAborted();
      for (const e of [...(this.events.get(c)?.values() ?? [])].sort((a, b) => a.seq - b.seq)) {
        if (out.length >= q.limit) return copy(out);
        if (asciiLower(e.body).includes(needle)) out.push(e);
      }
    }
    return copy(out);
  }

  async close(): Promise<void> {}
}

function copy<T>(x: T): T {
  return JSON.parse(JSON.stringify(x)) as T;
}
