/** Browser entry point: the IndexedDB store and the native WebSocket. */
import { ImClient, type ClientOptions } from './client.js';
import type { Event } from './protocol.js';
import { asStored, asciiLower, isChange, settle, settleNeeds, type ConvRecord, type FailedEntry, type Loaded, type OutboxEntry, type PageQuery, type SearchQuery,
  type Storage, type StoreOp } from './storage.js';

export * from './index.js';

/** 3: the index `ref` of edits and recalls by the message they change. */
const VERSION = 3;
const STORES = ['events', 'convs', 'outbox', 'failed', 'meta'] as const;

/**
 * The device's state in IndexedDB, record by record: `events` keyed by [conv, seq], one record per
 * conversation in `convs`, the outbox and the failed sends (in order of a position key), and `meta`.
 * Each batch is one `readwrite` transaction opened with `durability: "strict"`, so `write` resolves
 * only after the browser reports the commit as flushed (browsers without that option commit with their
 * default durability); a page is a key-range read of the events it returns. A database of version 1
 * (one record with the whole state) is converted on open, in the upgrade transaction.
 */
export class IndexedDbStorage implements Storage {
  private db: Promise<IDBDatabase> | null = null;

  constructor(readonly name: string, private readonly idb: IDBFactory = globalThis.indexedDB) {}

  private open(): Promise<IDBDatabase> {
    this.db ??= new Promise((resolve, reject) => {
      const req = this.idb.open(this.name, VERSION);
      req.onupgradeneeded = (ev) => upgrade(req.result, req.transaction!, ev.oldVersion);
      req.onsuccess = () => {
        req.result.onversionchange = () => req.result.close();   // let a delete or a newer page's upgrade proceed
        resolve(req.result);
      };
      req.onerror = () => reject(req.error);
      req.onblocked = () => reject(new Error(`${this.name}: the database is held open by an older page`));
    });
    return this.db;
  }

  async load(): Promise<Loaded> {
    const db = await this.open();
    const tx = db.transaction(['convs', 'outbox', 'failed', 'meta'], 'readonly');
    const [convs, outbox, failed, me] = await Promise.all([
      request<ConvRecord[]>(tx.objectStore('convs').getAll()),
      request<Array<{ pos: number; entry: OutboxEntry }>>(tx.objectStore('outbox').getAll()),
      request<Array<{ pos: number; entry: FailedEntry }>>(tx.objectStore('failed').getAll()),
      request<string | undefined>(tx.objectStore('meta').get('me')),
    ]);
    return { me: me ?? null, convs, outbox: outbox.map((r) => r.entry), failed: failed.map((r) => r.entry) };
  }

  /**
   * One transaction; ops that read first (events, whose edits and recalls are settled against what is held; a
   * record, whose last event is written as stored) are applied in order, each after the previous one's requests.
   */
  async write(ops: StoreOp[]): Promise<Event[]> {
    const db = await this.open();
    const copy = JSON.parse(JSON.stringify(ops)) as StoreOp[];
    const tx = db.transaction([...STORES], 'readwrite', { durability: 'strict' });
    const done = completion(tx);
    const put: Event[] = [];
    try {
      for (const o of copy) {
        if (o.op === 'events') put.push(...await putEvents(tx, o.events));
        else if (o.op === 'conv' && o.rec.last) {
          const stored = await request<Event | undefined>(tx.objectStore('events').get([o.rec.conv, o.rec.last.seq]));
          tx.objectStore('convs').put({ ...o.rec, last: asStored(o.rec.last, stored) });
        } else apply(tx, o);
      }
    } catch (e) {
      try { tx.abort(); } catch { /* aborted already */ }
      await done.catch(() => undefined);
      throw e;
    }
    await done;
    return put;
  }

  async page(conv: string, q: PageQuery): Promise<Event[]> {
    const db = await this.open();
    const store = db.transaction('events', 'readonly').objectStore('events');
    const range = q.after !== undefined ? IDBKeyRange.bound([conv, q.after], [conv, Infinity], true, false)
      : IDBKeyRange.bound([conv, -Infinity], [conv, q.before ?? Infinity], false, q.before !== undefined);
    const out: Event[] = [];
    await new Promise<void>((resolve, reject) => {
      const req = store.openCursor(range, q.after !== undefined ? 'next' : 'prev');
      req.onsuccess = () => {
        const c = req.result;
        if (!c || out.length >= q.limit) return resolve();
        if (!isChange(c.value as Event)) out.push(c.value as Event);
        c.continue();
      };
      req.onerror = () => reject(req.error);
    });
    return q.after !== undefined ? out : out.reverse();
  }

  async changes(conv: string, seq: number): Promise<Event[]> {
    const db = await this.open();
    const events = await request<Event[]>(db.transaction('events', 'readonly').objectStore('events').index('ref').getAll([conv, seq]));
    return events.sort((a, b) => a.seq - b.seq);
  }

  /** A cursor over the events (of one conversation, or all) in key order, stopped at `limit`: O(events scanned). */
  async search(text: string, q: SearchQuery): Promise<Event[]> {
    const db = await this.open();
    const needle = asciiLower(text);
    const range = q.conv === undefined ? null : IDBKeyRange.bound([q.conv, -Infinity], [q.conv, Infinity]);
    const out: Event[] = [];
    await new Promise<void>((resolve, reject) => {
      const req = db.transaction('events', 'readonly').objectStore('events').openCursor(range);
      req.onsuccess = () => {
        const c = req.result;
        if (q.signal?.aborted) return reject(q.signal.reason);
        if (!c || out.length >= q.limit) return resolve();
        const e = c.value as Event;
        if (!isChange(e) && asciiLower(e.body).includes(needle)) out.push(e);
        c.continue();
      };
      req.onerror = () => reject(req.error);
    });
    return out;
  }

  async close(): Promise<void> {
    const db = this.db;
    this.db = null;
    if (db) (await db.catch(() => null))?.close();
  }

  /** Deletes the database `name` (e.g. at sign-out, after the client using it was closed). */
  static delete(name: string, idb: IDBFactory = globalThis.indexedDB): Promise<void> {
    return new Promise((resolve, reject) => {
      const req = idb.deleteDatabase(name);
      req.onsuccess = () => resolve();
      req.onerror = () => reject(req.error);
    });
  }
}

function upgrade(db: IDBDatabase, tx: IDBTransaction, oldVersion: number): void {
  // Events of a version-2 store carry no ref (edits did not exist): the new index starts empty and complete.
  if (oldVersion === 2) tx.objectStore('events').createIndex('ref', ['conv', 'ref']);
  if (oldVersion >= 2) return;
  db.createObjectStore('events', { keyPath: ['conv', 'seq'] }).createIndex('ref', ['conv', 'ref']);
  db.createObjectStore('convs', { keyPath: 'conv' });
  db.createObjectStore('outbox', { keyPath: 'pos', autoIncrement: true }).createIndex('cmid', 'entry.cmid', { unique: true });
  db.createObjectStore('failed', { keyPath: 'pos', autoIncrement: true }).createIndex('cmid', 'entry.cmid', { unique: true });
  db.createObjectStore('meta');
  if (oldVersion !== 1) return;
  // Version 1 kept the whole state in one record: each part becomes records of its own.
  const old = tx.objectStore('state');
  const req = old.get('state');
  req.onsuccess = () => {
    const s = req.result as { outbox?: OutboxEntry[]; failed?: FailedEntry[]; events?: Record<string, Record<string, Event>>;
      cursors?: Record<string, number> } | undefined;
    if (s) {
      for (const entry of s.outbox ?? []) tx.objectStore('outbox').add({ entry });
      for (const entry of s.failed ?? []) tx.objectStore('failed').add({ entry });
      for (const [conv, byseq] of Object.entries(s.events ?? {})) {
        let last: Event | null = null;
        for (const e of Object.values(byseq)) {
          tx.objectStore('events').put(e);
          if (!last || e.seq > last.seq) last = e;
        }
        const cursor = s.cursors?.[conv] ?? 0;
        const held = Object.values(byseq).map((e) => e.seq).filter((q) => q > cursor).sort((a, b) => a - b);
        // The history it held counts as read (the unread count of a record is that of its read mark).
        tx.objectStore('convs').put({ conv, cursor, held, last, readState: null, unread: 0 } satisfies ConvRecord);
      }
      for (const [conv, cursor] of Object.entries(s.cursors ?? {})) {
        if (!s.events?.[conv]) tx.objectStore('convs').put({ conv, cursor, held: [], last: null, readState: null, unread: 0 } satisfies ConvRecord);
      }
    }
    db.deleteObjectStore('state');
  };
}

/** Reads what {@link settle} needs (one request per seq and one range of the ref index per conversation), then puts what it says. */
async function putEvents(tx: IDBTransaction, events: Event[]): Promise<Event[]> {
  const store = tx.objectStore('events');
  const reads: Array<Promise<Event | Event[] | undefined>> = [];
  for (const n of settleNeeds(events)) {
    for (const seq of n.seqs) reads.push(request<Event | undefined>(store.get([n.conv, seq])));
    reads.push(request<Event[]>(store.index('ref').getAll(IDBKeyRange.bound([n.conv, n.low], [n.conv, n.high]))));
  }
  const held = (await Promise.all(reads)).flat().filter((e): e is Event => e !== undefined);
  const put = settle(events, held);
  for (const e of put) store.put(e);
  return put;
}

function apply(tx: IDBTransaction, o: StoreOp): void {
  switch (o.op) {
    case 'events': throw new Error('events: written by putEvents');
    case 'conv': tx.objectStore('convs').put(o.rec); break;
    case 'dropConv':
      tx.objectStore('events').delete(IDBKeyRange.bound([o.conv, -Infinity], [o.conv, Infinity]));
      tx.objectStore('convs').delete(o.conv);
      break;
    case 'outboxPut': putByCmid(tx.objectStore('outbox'), o.entry); break;
    case 'outboxDel': deleteByCmid(tx.objectStore('outbox'), o.cmid); break;
    case 'failedPut': putByCmid(tx.objectStore('failed'), o.entry); break;
    case 'failedDel': deleteByCmid(tx.objectStore('failed'), o.cmid); break;
    case 'me': tx.objectStore('meta').put(o.user, 'me'); break;
  }
}

/** Adds an entry at the end, or replaces the one with its cmid in place (keeping its position). */
function putByCmid(store: IDBObjectStore, entry: OutboxEntry): void {
  const req = store.index('cmid').getKey(entry.cmid);
  req.onsuccess = () => {
    if (req.result === undefined) store.add({ entry });
    else store.put({ pos: req.result, entry });
  };
}

function deleteByCmid(store: IDBObjectStore, cmid: string): void {
  const req = store.index('cmid').getKey(cmid);
  req.onsuccess = () => {
    if (req.result !== undefined) store.delete(req.result);
  };
}

function request<T>(req: IDBRequest): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result as T);
    req.onerror = () => reject(req.error);
  });
}

function completion(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error ?? new Error('the transaction was aborted'));
  });
}

/** Opens a client with an {@link IndexedDbStorage} named `dbName` and the browser's WebSocket. */
export function openBrowserClient(options: Omit<ClientOptions, 'storage'> & { dbName: string }): Promise<ImClient> {
  const { dbName, ...rest } = options;
  return ImClient.open({ ...rest, storage: new IndexedDbStorage(dbName) });
}
