// Edit and recall in the SDK: the outbox (edit/recall frames resent with the same cmid, terminal refusals kept as
// failed), and the rules applied by every store in any order (recall before the message, the message pushed
// after its recall, duplicates, an older edit arriving late), across a reopen of the SQLite store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { WebSocket } from 'ws';
import 'fake-indexeddb/auto';
import { ImClient, ImError, MemoryStorage, type ConvRecord, type Event, type Storage } from '../index.js';
import { SqliteStorage } from '../node.js';
import { IndexedDbStorage } from '../browser.js';
import { FakeServer, msg } from './fake-server.js';

const edit = (conv: string, seq: number, ref: number, body: string): Event =>
  ({ conv, seq, kind: 'edit', mid: `mid-${seq}`, sender: 'u-bo', cmid: `k${seq}`, body, at: 2, ref });
const recall = (conv: string, seq: number, ref: number): Event =>
  ({ conv, seq, kind: 'recall', mid: `mid-${seq}`, sender: 'u-bo', cmid: `k${seq}`, body: '', at: 3, ref });
const rec = (conv: string, cursor: number, last: Event | null): ConvRecord => ({ conv, cursor, held: [], last, readState: null, unread: 0 });
let idbN = 0;
const dbFile = async () => path.join(await mkdtemp(path.join(tmpdir(), 'imjs-edit-')), 'store.db');
/** A fake's answer to `sub` (no conversations) and to `frame`s of type `t`, if given. */
const answering = (t: string | null, answer: (f: Record<string, unknown>) => object) =>
  (f: Record<string, unknown>, reply: (o: object) => void) => {
    if (f.t === 'sub') reply({ t: 'subbed', rid: f.rid, convs: [] });
    else if (f.t === t) reply(answer(f));
  };

const backends: Array<[string, () => Promise<() => Storage>]> = [
  ['sqlite', async () => { const f = await dbFile(); return () => new SqliteStorage(f); }],
  ['indexeddb', async () => { const n = `imjs-edit-${++idbN}`; return () => new IndexedDbStorage(n); }],
  ['memory', async () => { const m = new MemoryStorage(); return () => m; }],
];

for (const [name, make] of backends) {
  test(`${name}: a message shows its latest edit whatever the order; edits are not listed as messages`, async () => {
    const open = await make();
    let s = open();
    await s.load();
    await s.write([{ op: 'events', events: [edit('c', 5, 1, 'second')] }]);      // before its message
    await s.write([{ op: 'events', events: [msg('c', 1, 'first')] }, { op: 'conv', rec: rec('c', 1, msg('c', 1, 'first')) }]);
    await s.write([{ op: 'events', events: [edit('c', 3, 1, 'older'), edit('c', 5, 1, 'a duplicate')] }]);   // late, and a copy
    assert.deepEqual((await s.page('c', { limit: 10 })).map((e) => [e.seq, e.kind, e.body, e.edited]), [[1, 'msg', 'second', 5]]);
    assert.deepEqual((await s.search('second', { limit: 10 })).map((e) => e.seq), [1]);
    assert.deepEqual(await s.search('older', { limit: 10 }), [], 'an edit is not found as a message of its own');
    assert.deepEqual((await s.changes('c', 1)).map((e) => [e.seq, e.body]), [[3, 'older'], [5, 'second']]);
    await s.close();
    s = open();
    assert.equal((await s.load()).convs[0].last?.body, 'second', "the record's last event as stored");
    await s.close();
  });

  test(`${name}: a recall empties the message and its edits in any order; a copy of the message arriving later stays empty`, async () => {
    const open = await make();
    let s = open();
    await s.load();
    await s.write([{ op: 'events', events: [msg('c', 1, 'secret'), edit('c', 2, 1, 'secret too')] }, { op: 'conv', rec: rec('c', 2, msg('c', 1, 'secret')) }]);
    await s.write([{ op: 'events', events: [recall('c', 4, 1)] }, { op: 'conv', rec: rec('c', 4, msg('c', 1, 'secret')) }]);
    await s.write([{ op: 'events', events: [recall('d', 3, 1)] }]);                // recall before the message
    await s.write([{ op: 'events', events: [edit('d', 2, 1, 'secret edit'), msg('d', 1, 'secret')] },   // then both, one batch
      { op: 'conv', rec: rec('d', 3, msg('d', 1, 'secret')) }]);
    await s.write([{ op: 'events', events: [recall('c', 4, 1), edit('c', 3, 1, 'secret late')] }]);   // a duplicate, a late edit
    await s.close();
    s = open();
    const l = await s.load();
    for (const conv of ['c', 'd']) {
      assert.deepEqual((await s.page(conv, { limit: 10 })).map((e) => [e.seq, e.body, e.recalled]), [[1, '', true]], conv);
      assert.ok((await s.changes(conv, 1)).every((e) => e.body === ''), `${conv}: no edit keeps its text`);
    }
    assert.deepEqual(l.convs.map((c) => [c.conv, c.last?.body, c.last?.recalled]).sort(), [['c', '', true], ['d', '', true]]);
    assert.deepEqual(await s.search('secret', { limit: 10 }), []);
    await s.close();
  });
}

test('sqlite: the file keeps no text of a recalled message or its edits', async () => {
  const file = await dbFile();
  const s = new SqliteStorage(file);
  await s.load();
  await s.write([{ op: 'events', events: [msg('c', 1, 'zebra-original'), edit('c', 2, 1, 'zebra-edited')] },
    { op: 'conv', rec: rec('c', 2, msg('c', 1, 'zebra-original')) }]);
  // as the client writes: each batch with the conversation's record, whose last event it may hold with its old text
  await s.write([{ op: 'events', events: [recall('c', 3, 1)] }, { op: 'conv', rec: rec('c', 3, msg('c', 1, 'zebra-original')) }]);
  await s.close();   // checkpoints the WAL into the file
  for (const f of [file, `${file}-wal`]) {
    const bytes = await readFile(f, 'latin1').catch(() => '');
    assert.equal(bytes.includes('zebra'), false, `${f}: no recalled text in a free page, the WAL or the record`);
  }
});

test('stores written before edit and recall are upgraded when opened: SQLite gets its columns, IndexedDB 2 its ref index', async () => {
  const file = await dbFile();
  const sqlite = await import('node-sqlite3-wasm');
  const old = new sqlite.default.Database(file);
  old.exec(`CREATE TABLE events(conv TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, mid TEXT NOT NULL, sender TEXT NOT NULL,
    cmid TEXT, body TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (conv, seq)) WITHOUT ROWID;
    INSERT INTO events VALUES ('c', 1, 'msg', 'mid-1', 'u-bo', 'k1', 'm1', 1);`);
  old.close();
  const name = `imjs-edit-v2-${++idbN}`;
  await new Promise<void>((resolve, reject) => {
    const req = indexedDB.open(name, 2);
    req.onupgradeneeded = () => {
      req.result.createObjectStore('events', { keyPath: ['conv', 'seq'] }).put(msg('c', 1));
      req.result.createObjectStore('convs', { keyPath: 'conv' });
      for (const o of ['outbox', 'failed']) req.result.createObjectStore(o, { keyPath: 'pos', autoIncrement: true }).createIndex('cmid', 'entry.cmid', { unique: true });
      req.result.createObjectStore('meta');
    };
    req.onsuccess = () => { req.result.close(); resolve(); };
    req.onerror = () => reject(req.error);
  });
  for (const s of [new SqliteStorage(file), new IndexedDbStorage(name)]) {
    await s.load();
    await s.write([{ op: 'events', events: [edit('c', 2, 1, 'edited')] }]);
    assert.deepEqual((await s.page('c', { limit: 10 })).map((e) => [e.seq, e.body, e.edited]), [[1, 'edited', 2]]);
    await s.close();
  }
});

async function client(server: FakeServer, storage: Storage = new MemoryStorage()): Promise<ImClient> {
  return ImClient.open({ url: server.url, token: 't', storage, webSocket: WebSocket as never, reconnectMinMs: 5, reconnectMaxMs: 20,
    requestTimeoutMs: 300 });
}

test('edit and recall go through the outbox: resent with the same cmid until answered; a terminal refusal is kept as failed', async () => {
  const server = await FakeServer.start();
  let lose = 1;
  server.handler = (f, reply) => {
    if (f.t === 'sub') reply({ t: 'subbed', rid: f.rid, convs: [] });
    if (f.t === 'edit' && lose-- > 0) return;   // the reply is lost: the edit goes out again with its cmid
    if (f.t === 'edit') reply({ t: 'sent', rid: f.rid, conv: f.conv, seq: 8, mid: 'm8', dup: true, epoch: 1 });
    if (f.t === 'recall') reply({ t: 'error', rid: f.rid, code: 'NOT_SENDER', msg: 'not yours' });
  };
  const c = await client(server);
  await c.connect();
  const sent = await c.edit('c-ab', 3, 'better');
  assert.deepEqual([sent.seq, sent.dup, sent.target], [8, true, 3]);
  const edits = server.of('edit');
  assert.equal(edits.length, 2);
  assert.equal(edits[0].cmid, edits[1].cmid, 'the same cmid on every attempt');
  assert.deepEqual({ ...edits[0], rid: 0, cmid: 0 }, { t: 'edit', rid: 0, conv: 'c-ab', cmid: 0, seq: 3, body: 'better' });
  const failed: string[] = [];
  c.on('sendFailed', (e, err) => failed.push(`${e.target}/${e.recall}/${err.code}`));
  await assert.rejects(c.recall('c-ab', 3), (e: ImError) => e.code === 'NOT_SENDER');
  assert.deepEqual(failed, ['3/true/NOT_SENDER']);
  assert.deepEqual(c.failed().map((e) => [e.target, e.recall, e.code]), [[3, true, 'NOT_SENDER']]);
  assert.equal(server.of('recall').length, 1, 'a terminal code is not retried');
  assert.deepEqual(server.of('recall').map((f) => [f.seq, 'body' in f]), [[3, false]]);
  assert.deepEqual(c.outbox(), []);
  await assert.rejects(c.edit('c-ab', 0, 'x'), ImError);
  await assert.rejects(c.edit('c-ab', 3, ''), ImError);
  await c.close(); await server.close();
});

test('a recall queued offline is resent after a restart with the same cmid', async () => {
  const file = await dbFile();
  const server = await FakeServer.start();
  server.handler = answering('recall', (f) => ({ t: 'sent', rid: f.rid, conv: f.conv, seq: 9, mid: 'm9', dup: false, epoch: 1 }));
  let c = await client(server, new SqliteStorage(file));
  void c.recall('c-ab', 4).catch(() => undefined);
  await new Promise((r) => setTimeout(r, 50));
  const cmid = c.outbox()[0].cmid;
  await c.close();
  c = await client(server, new SqliteStorage(file));
  assert.deepEqual(c.outbox().map((e) => [e.cmid, e.target, e.recall]), [[cmid, 4, true]]);
  const sent = new Promise<string>((r) => c.on('sent', (s) => r(s.cmid)));
  await c.connect();
  assert.equal(await sent, cmid);
  assert.deepEqual(server.of('recall').map((f) => [f.cmid, f.seq]), [[cmid, 4]]);
  assert.equal(c.outbox().length, 0);
  await c.close(); await server.close();
});

test('received edits and recalls: events, edited/recalled, the list and history; a push of the original after its recall stays empty; unread unchanged', async () => {
  const file = await dbFile();
  const server = await FakeServer.start();
  server.handler = answering('sync', (f) => ({ t: 'synced', rid: f.rid, conv: f.conv, events: [], more: false, head: 0 }));
  let c = await client(server, new SqliteStorage(file));
  const told: string[] = [];
  c.on('edited', (conv, seq, body, by) => told.push(`edited ${conv}#${seq} ${body} by ${by}`));
  c.on('recalled', (conv, seq) => told.push(`recalled ${conv}#${seq}`));
  const events: Event[] = [];
  c.on('event', (e) => events.push(e));
  await c.connect();
  server.push({ t: 'event', ev: msg('c-ab', 1, 'hello') });
  server.push({ t: 'event', ev: edit('c-ab', 2, 1, 'hello again') });
  server.push({ t: 'event', ev: edit('c-ab', 2, 1, 'hello again') });   // a duplicate
  await server.until(() => c.cursor('c-ab') === 2, 'the edit');
  await server.until(() => told.length === 1, 'edited');
  assert.deepEqual(told, ['edited c-ab#1 hello again by 2']);
  assert.equal((await c.listConversations())[0].last?.body, 'hello again');
  assert.deepEqual((await c.page('c-ab')).map((e) => [e.seq, e.body, e.edited]), [[1, 'hello again', 2]]);
  assert.deepEqual((await c.editHistory('c-ab', 1)).map((e) => e.body), ['hello again']);
  assert.equal(c.unreadCount('c-ab'), 1, 'an edit is not unread');
  server.push({ t: 'event', ev: recall('c-ab', 4, 3) });   // the recall of a message not yet held (a gap at 3)
  server.push({ t: 'event', ev: msg('c-ab', 3, 'oops') });  // its push, arriving after the recall
  await server.until(() => c.cursor('c-ab') === 4, 'the recall and the message');
  await server.until(() => told.length === 2, 'recalled');
  assert.deepEqual(told.at(-1), 'recalled c-ab#3');
  const m3 = events.find((e) => e.seq === 3)!;
  assert.deepEqual([m3.body, m3.recalled], ['', true], 'the message is told as stored: without its text');
  await c.close();
  c = await client(server, new SqliteStorage(file));
  const page = await c.page('c-ab');
  assert.deepEqual(page.map((e) => [e.seq, e.body, e.recalled ?? false]), [[1, 'hello again', false], [3, '', true]]);
  assert.deepEqual((await c.listConversations())[0].last, page[1], 'the last message as stored, after a reopen');
  assert.deepEqual(await c.search('oops'), []);
  assert.equal(c.unreadCount('c-ab'), 2, 'the two messages; no edit or recall');
  await c.close(); await server.close();
});
