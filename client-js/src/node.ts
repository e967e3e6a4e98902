/** Node entry point: the SQLite store (WebAssembly SQLite on the file system) and the `ws` WebSocket. */
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, readSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import * as path from 'node:path';
import sqlite from 'node-sqlite3-wasm';
import { WebSocket as NodeWebSocket } from 'ws';
import { ImClient, type ClientOptions, type WebSocketCtor } from './client.js';
import type { Event } from './protocol.js';
import { asStored, settle, settleNeeds, type ConvRecord, type FailedEntry, type Loaded, type OutboxEntry, type PageQuery, type SearchQuery,
  type Storage, type StoreOp } from './storage.js';

export * from './index.js';

type Database = InstanceType<typeof sqlite.Database>;
type Statement = ReturnType<Database['prepare']>;
type Row = Record<string, unknown>;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS events(
  conv TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, mid TEXT NOT NULL, sender TEXT NOT NULL,
  cmid TEXT, body TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (conv, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS convs(conv TEXT PRIMARY KEY, rec TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS outbox(pos INTEGER PRIMARY KEY, cmid TEXT NOT NULL UNIQUE, entry TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS failed(pos INTEGER PRIMARY KEY, cmid TEXT NOT NULL UNIQUE, entry TEXT NOT NULL);
`;
/**
 * Edit and recall (added to stores of earlier versions when opened): `ref` (the message an edit or recall
 * changes), `recalled`, `edited` (the seq of the edit a message's body is from), and the index of changes by ref.
 */
const EDIT_COLUMNS = ['ref INTEGER', 'recalled INTEGER', 'edited INTEGER'];
/** A bulk join's `count` (added to stores of earlier versions when opened; their bulk joins read as single joins). */
const COUNT_COLUMN = 'count INTEGER';
const EDIT_INDEX = 'CREATE INDEX IF NOT EXISTS events_ref ON events(conv, ref) WHERE ref IS NOT NULL';
/** Edits and recalls are kept as events but listed by no query of messages. */
const NOT_CHANGE = "kind NOT IN ('edit', 'recall')";
const SQLITE_MAGIC = 'SQLite format 3\u0000';
/** Files of this process open as stores: SQLite's lock is per process here, so a second open must be refused by us. */
const openHere = new Set<string>();

/**
 * The device's state in one SQLite database file, written record by record: events by (conv, seq), one
 * small record per conversation, the outbox and the failed sends, each batch one transaction.
 *
 * SQLite is the WebAssembly build of `node-sqlite3-wasm` (installed from npm as JavaScript and a .wasm
 * file: nothing is compiled or downloaded at install), whose file system layer reads and writes the
 * database file directly and fsyncs on SQLite's sync calls; unlike sql.js it does not hold the database
 * in memory. The database runs in WAL mode with `synchronous=FULL` (the WAL is fsynced at every commit,
 * so `write` resolves only once its batch is durable) and `locking_mode=EXCLUSIVE` (this layer has no
 * shared memory, which WAL needs unless one connection holds the file; one process per store).
 * After a crash SQLite ignores a torn tail of the WAL (frames after the last whole commit fail their
 * checksums) and the store opens at the last durable commit. The JSON state file of version 0.1 is
 * converted on open (see {@link convertLegacy}). A file that is not a database, or damage
 * SQLite meets while reading (`database disk image is malformed`), fails `load`, `page` or `write` with
 * an error naming the file: never an empty store. Its calls are synchronous (they block the event loop
 * for the duration of a commit, ~1–5 ms with its fsync).
 */
export class SqliteStorage implements Storage {
  private db: Database | null = null;
  private key = '';
  /** The statements every received batch runs, prepared once (a prepare costs about as much as the query). */
  private readonly statements = new Map<string, Statement>();

  constructor(readonly file: string) {}

  async load(): Promise<Loaded> {
    if (this.db) throw new Error(`${this.file}: already loaded`);
    this.key = path.resolve(this.file);
    if (openHere.has(this.key)) throw new Error(`${this.file}: already open in this process`);
    mkdirSync(path.dirname(this.key), { recursive: true });
    await convertLegacy(this.key);
    claim(this.key);
    openHere.add(this.key);
    try {
      const db = new sqlite.Database(this.key);
      this.db = db;
      this.run(() => {
        db.exec('PRAGMA locking_mode=EXCLUSIVE');   // before the first access: WAL without shared memory
        const mode = db.get('PRAGMA journal_mode=WAL') as Row | null;
        if (mode?.journal_mode !== 'wal') throw new Error(`WAL mode refused (${String(mode?.journal_mode)})`);
        db.exec('PRAGMA synchronous=FULL');
        db.exec('PRAGMA secure_delete=ON');   // a recalled text leaves no copy in a freed or rewritten page
        db.exec(`BEGIN; ${SCHEMA}`);
        const have = new Set(db.all('PRAGMA table_info(events)').map((r) => r.name as string));
        for (const c of [...EDIT_COLUMNS, COUNT_COLUMN]) if (!have.has(c.split(' ')[0])) db.exec(`ALTER TABLE events ADD COLUMN ${c}`);
        db.exec(`${EDIT_INDEX}; COMMIT;`);
      });
      return this.run(() => ({
        me: ((db.get("SELECT v FROM meta WHERE k = 'me'") as Row | null)?.v as string | undefined) ?? null,
        convs: db.all('SELECT rec FROM convs').map((r) => JSON.parse(r.rec as string) as ConvRecord),
        outbox: db.all('SELECT entry FROM outbox ORDER BY pos').map((r) => JSON.parse(r.entry as string) as OutboxEntry),
        failed: db.all('SELECT entry FROM failed ORDER BY pos').map((r) => JSON.parse(r.entry as string) as FailedEntry),
      }));
    } catch (e) {
      this.release();
      throw e;
    }
  }

  async write(ops: StoreOp[]): Promise<Event[]> {
    const db = this.open();
    return this.run(() => {
      db.exec('BEGIN IMMEDIATE');
      try {
        const put: Event[] = [];
        for (const o of ops) this.apply(db, o, put);
        db.exec('COMMIT');
        return put;
      } catch (e) {
        if (db.inTransaction) db.exec('ROLLBACK');
        throw e;
      }
    });
  }

  private apply(db: Database, o: StoreOp, put: Event[]): void {
    switch (o.op) {
      case 'events': {
        const held: Event[] = [];
        const one = this.stmt(db, 'SELECT * FROM events WHERE conv = ? AND seq = ?');
        const refs = this.stmt(db, 'SELECT * FROM events WHERE conv = ? AND ref BETWEEN ? AND ?');
        for (const n of settleNeeds(o.events)) {
          for (const seq of n.seqs) {
            const row = one.get([n.conv, seq]);
            if (row) held.push(toEvent(row));
          }
          held.push(...refs.all([n.conv, n.low, n.high]).map(toEvent));
        }
        const st = this.stmt(db, `INSERT OR REPLACE INTO events(conv, seq, kind, mid, sender, cmid, body, at, ref, recalled, edited, count)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
        for (const e of settle(o.events, held)) {
          st.run([e.conv, e.seq, e.kind, e.mid, e.sender, e.cmid ?? null, e.body, e.at, e.ref ?? null, e.recalled ? 1 : null, e.edited ?? null,
            e.count ?? null]);
          put.push(e);
        }
        break;
      }
      case 'conv': {
        const last = o.rec.last;
        let stored: Event | undefined;
        if (last) {
          for (const e of put) if (e.conv === o.rec.conv && e.seq === last.seq) stored = e;   // put by this batch: the usual case
          const row = stored ? null : this.stmt(db, 'SELECT * FROM events WHERE conv = ? AND seq = ?').get([o.rec.conv, last.seq]);
          if (row) stored = toEvent(row);
        }
        const rec = last ? { ...o.rec, last: asStored(last, stored) } : o.rec;
        db.run('INSERT OR REPLACE INTO convs(conv, rec) VALUES (?, ?)', [rec.conv, JSON.stringify(rec)]);
        break;
      }
      case 'dropConv':
        db.run('DELETE FROM events WHERE conv = ?', [o.conv]);
        db.run('DELETE FROM convs WHERE conv = ?', [o.conv]);
        break;
      case 'outboxPut':
        db.run('INSERT INTO outbox(cmid, entry) VALUES (?, ?) ON CONFLICT(cmid) DO UPDATE SET entry = excluded.entry',
          [o.entry.cmid, JSON.stringify(o.entry)]);
        break;
      case 'outboxDel': db.run('DELETE FROM outbox WHERE cmid = ?', [o.cmid]); break;
      case 'failedPut':
        db.run('INSERT INTO failed(cmid, entry) VALUES (?, ?) ON CONFLICT(cmid) DO UPDATE SET entry = excluded.entry',
          [o.entry.cmid, JSON.stringify(o.entry)]);
        break;
      case 'failedDel': db.run('DELETE FROM failed WHERE cmid = ?', [o.cmid]); break;
      case 'me': db.run("INSERT OR REPLACE INTO meta(k, v) VALUES ('me', ?)", [o.user]); break;
    }
  }

  async page(conv: string, q: PageQuery): Promise<Event[]> {
    const db = this.open();
    return this.run(() => {
      if (q.after !== undefined) {
        return db.all(`SELECT * FROM events WHERE conv = ? AND seq > ? AND ${NOT_CHANGE} ORDER BY seq LIMIT ?`, [conv, q.after, q.limit])
          .map(toEvent);
      }
      const rows = db.all(`SELECT * FROM events WHERE conv = ? AND seq < ? AND ${NOT_CHANGE} ORDER BY seq DESC LIMIT ?`,
        [conv, q.before ?? Number.MAX_SAFE_INTEGER, q.limit]);
      return rows.reverse().map(toEvent);
    });
  }

  /** A scan with LIKE (ASCII case-insensitive) in (conv, seq) order, stopped at `limit`: O(events scanned). */
  async search(text: string, q: SearchQuery): Promise<Event[]> {
    const db = this.open();
    const pattern = `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    const out: Event[] = [];
    // Conversation by conversation (each found by a seek of the primary key); SQLite's calls are
    // synchronous, so the scan yields to the event loop every few milliseconds (other work goes on and
    // an abort of `signal` is seen).
    let c: string | undefined = q.conv;
    if (c === undefined) c = this.nextConv(db, null);
    let slice = performance.now();
    while (c !== undefined) {
      if (performance.now() - slice > 5) {
        await new Promise((r) => setImmediate(r));
        slice = performance.now();
      }
      q.signal?.throwIfAborted();
      const conv = c;
      const rows = this.run(() => db.all(`SELECT * FROM events WHERE conv = ? AND body LIKE ? ESCAPE '\\' AND ${NOT_CHANGE} ORDER BY seq LIMIT ?`,
        [conv, pattern, q.limit - out.length]));
      out.push(...rows.map(toEvent));
      if (out.length >= q.limit || q.conv !== undefined) break;
      c = this.nextConv(db, conv);
    }
    return out;
  }

  async changes(conv: string, seq: number): Promise<Event[]> {
    const db = this.open();
    return this.run(() => db.all('SELECT * FROM events WHERE conv = ? AND ref = ? ORDER BY seq', [conv, seq]).map(toEvent));
  }

  private stmt(db: Database, sql: string): Statement {
    let st = this.statements.get(sql);
    if (!st) this.statements.set(sql, (st = db.prepare(sql)));
    return st;
  }

  private nextConv(db: Database, after: string | null): string | undefined {
    const r = this.run(() => (after === null ? db.get('SELECT conv FROM events ORDER BY conv LIMIT 1')
      : db.get('SELECT conv FROM events WHERE conv > ? ORDER BY conv LIMIT 1', [after])) as Row | null);
    return r ? (r.conv as string) : undefined;
  }

  async close(): Promise<void> {
    if (!this.db) return;
    try {
      this.run(() => {
        this.finalizeStatements();
        this.db!.close();
      });
    } finally {
      this.db = null;
      this.release();
    }
  }

  private finalizeStatements(): void {
    for (const st of this.statements.values()) st.finalize();
    this.statements.clear();
  }

  private release(): void {
    if (this.db) {
      try {
        this.finalizeStatements();
        this.db.close();
      } catch { /* already failing */ }
      this.db = null;
    }
    if (!openHere.delete(this.key)) return;
    rmSync(`${this.key}.owner`, { force: true });
  }

  private open(): Database {
    if (!this.db) throw new Error(`${this.file}: the store is not open`);
    return this.db;
  }

  /** Runs SQLite calls, naming the file in any error (e.g. `database disk image is malformed`). */
  private run<T>(fn: () => T): T {
    try {
      return fn();
    } catch (e) {
      throw new Error(`${this.file}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
}

function toEvent(r: Row): Event {
  const e: Event = { conv: r.conv as string, seq: r.seq as number, kind: r.kind as Event['kind'], mid: r.mid as string,
    sender: r.sender as string, body: r.body as string, at: r.at as number };
  if (r.cmid !== null) e.cmid = r.cmid as string;
  if (r.ref !== null && r.ref !== undefined) e.ref = r.ref as number;
  if (r.recalled) e.recalled = true;
  if (r.edited !== null && r.edited !== undefined) e.edited = r.edited as number;
  if (r.count !== null && r.count !== undefined) e.count = r.count as number;
  return e;
}

/** What `file` holds, by its first bytes; a file that is neither is refused with a clear message. */
function kindOf(file: string): 'none' | 'sqlite' | 'json' {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 'none';
    throw e;
  }
  const head = Buffer.alloc(16);
  let n: number;
  try {
    n = readSync(fd, head, 0, 16, 0);
  } finally {
    closeSync(fd);
  }
  if (n === 0 || head.toString('latin1', 0, n) === SQLITE_MAGIC) return 'sqlite';   // empty: SQLite starts it afresh
  if (head[0] === 0x7b) return 'json';
  throw new Error(`${file}: not a SQLite database (the first bytes are not its header): damaged or not a store`);
}

/**
 * The JSON state file of @im/client 0.1 at `file` becomes a SQLite store, crash-safely: the JSON file is
 * renamed to `<file>.v0.json` (kept), a database is built beside it and renamed over `file`. A crash at
 * any step leaves either the JSON file at `file` or the `.v0.json` copy without `file`, and the next
 * open carries on from there. Its outbox (unsent messages), failed sends, events and cursors are kept;
 * the history it held counts as read.
 */
async function convertLegacy(file: string): Promise<void> {
  const v0 = `${file}.v0.json`;
  const kind = kindOf(file);
  if (kind === 'sqlite') return;
  if (kind === 'json') {
    renameSync(file, v0);
    syncDir(file);
  } else if (!existsSync(v0)) {
    return;   // a new store
  }
  const old = JSON.parse(readFileSync(v0, 'utf8')) as { outbox?: OutboxEntry[]; failed?: FailedEntry[];
    events?: Record<string, Record<string, Event>>; cursors?: Record<string, number> };
  const tmp = `${file}.converting`;
  for (const f of [tmp, `${tmp}-wal`, `${tmp}.owner`]) rmSync(f, { force: true });
  rmSync(`${tmp}.lock`, { recursive: true, force: true });
  const s = new SqliteStorage(tmp);
  await s.load();
  const ops: StoreOp[] = [];
  for (const entry of old.outbox ?? []) ops.push({ op: 'outboxPut', entry });
  for (const entry of old.failed ?? []) ops.push({ op: 'failedPut', entry });
  for (const conv of new Set([...Object.keys(old.cursors ?? {}), ...Object.keys(old.events ?? {})])) {
    const events = Object.values(old.events?.[conv] ?? {});
    const cursor = old.cursors?.[conv] ?? 0;
    const last = events.reduce<Event | null>((m, e) => (!m || e.seq > m.seq ? e : m), null);
    if (events.length > 0) ops.push({ op: 'events', events });
    ops.push({ op: 'conv', rec: { conv, cursor, held: events.map((e) => e.seq).filter((q) => q > cursor).sort((a, b) => a - b),
      last, readState: null, unread: 0 } });
  }
  await s.write(ops);
  await s.close();   // checkpoints the WAL into the file
  renameSync(tmp, file);
  syncDir(file);
}

function syncDir(file: string): void {
  const fd = openSync(path.dirname(file), 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * One process per store: a file `<db>.owner` names the process holding it. A holder that is gone (killed)
 * left SQLite's lock directory behind; it is removed so that the store opens (and SQLite recovers its WAL).
 */
function claim(file: string): void {
  const owner = `${file}.owner`;
  let pid = 0;
  try {
    pid = Number(readFileSync(owner, 'utf8').trim());
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  if (pid > 0 && pid !== process.pid && alive(pid)) throw new Error(`${file}: in use by process ${pid}`);
  rmSync(`${file}.lock`, { recursive: true, force: true });
  writeFileSync(owner, String(process.pid));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Whom a `wss://` socket trusts in Node: `ca`, CA certificates as PEM text (one string may hold several), or
 * `caFile`, a PEM file of them, instead of Node's bundled CAs (as Node's `tls` option `ca`); neither: Node's
 * bundled CAs (and `NODE_EXTRA_CA_CERTS`). The host name of the url is always checked against the certificate.
 */
export interface NodeTrust {
  ca?: string;
  caFile?: string;
}

/**
 * The `ws` package's WebSocket, trusting `trust` for `wss://` urls: for `ImClient.open` with a storage of the
 * app's. Reads and checks the CA file or text now: an `Error` naming the option (and the file) if it cannot be
 * read or holds no PEM certificate.
 */
export function nodeWebSocket(trust: NodeTrust = {}): WebSocketCtor {
  const ca = caCertificates(trust);
  if (!ca) return NodeWebSocket as unknown as WebSocketCtor;
  return class extends NodeWebSocket {
    constructor(url: string) {
      super(url, { ca });
    }
  } as unknown as WebSocketCtor;
}

/** The PEM blocks of the trusted CAs, each checked to parse; undefined for Node's own. */
function caCertificates({ ca, caFile }: NodeTrust): string[] | undefined {
  if (ca !== undefined && caFile !== undefined) throw new Error('ca, caFile: give one of them, not both');
  if (ca === undefined && caFile === undefined) return undefined;
  let where = 'ca';
  let text = ca ?? '';
  if (caFile !== undefined) {
    where = `caFile ${caFile}`;
    try {
      text = readFileSync(caFile, 'utf8');
    } catch (e) {
      throw new Error(`${where}: cannot read it: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new Error(`${where}: holds no certificate (expected PEM -----BEGIN CERTIFICATE-----)`);
  for (const b of blocks) {
    try {
      new X509Certificate(b);
    } catch (e) {
      throw new Error(`${where}: a certificate does not parse: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  return blocks;
}

/**
 * Opens a client with a {@link SqliteStorage} at `file` (created if missing) and the `ws` package's WebSocket,
 * trusting `ca` or `caFile` ({@link NodeTrust}) for a `wss://` url.
 */
export async function openNodeClient(options: Omit<ClientOptions, 'storage' | 'webSocket'> & NodeTrust & { file: string }): Promise<ImClient> {
  const { file, ca, caFile, ...rest } = options;
  if ((ca !== undefined || caFile !== undefined) && !/^wss:/i.test(rest.url)) throw new Error(`ca, caFile: only for a wss:// url, got ${rest.url}`);
  const webSocket = nodeWebSocket({ ca, caFile });
  return ImClient.open({ ...rest, storage: new SqliteStorage(file), webSocket });
}
