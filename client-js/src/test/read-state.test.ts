// Read state and unread counts (docs/protocol.md, "Read state and unread counts") against the fake server:
// markRead coalesced like acks, the counting rule (the latest read state's unread plus messages of others held
// above its head, idempotent by (conv, seq)), `unread` pushes from the user's other devices, strict decoding of
// the new frames, and counts that survive a restart in each store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import 'fake-indexeddb/auto';
import { WebSocket } from 'ws';
import { ImClient, ImError, MemoryStorage, parseServerFrame, type ClientOptions, type ConvReadState, type ConvRecord, type Event, type PageQuery, type Storage } from '../index.js';
import { SqliteStorage } from '../node.js';
import { IndexedDbStorage } from '../browser.js';
import { FakeReads, FakeServer, msg } from './fake-server.js';
import { READ_INTERVAL_MS } from '../internal/reads.js';

const base = (server: FakeServer, storage: Storage = new MemoryStorage()): ClientOptions => ({ url: server.url, token: 't', storage,
  webSocket: WebSocket as never, reconnectMinMs: 5, reconnectMaxMs: 20, requestTimeoutMs: 1000 });

const ev = (conv: string, seq: number, sender = 'u-bo', kind: 'msg' | 'join' | 'leave' = 'msg') => ({ ...msg(conv, seq), sender, kind });

/** Resolves with the first `unread` callback of `c` for which `pred` holds. */
function unreadWhere(c: ImClient, pred: (conv: string, read: number, unread: number) => boolean): Promise<[string, number, number]> {
  return new Promise((resolve) => {
    const off = c.on('unread', (conv, read, unread) => {
      if (pred(conv, read, unread)) { off(); resolve([conv, read, unread]); }
    });
  });
}

test('read and unread frames are decoded strictly: a malformed one is dropped, a malformed subbed read state left out', () => {
  assert.deepEqual(parseServerFrame('{"t":"readack","rid":"r8","conv":"c-ab","read":7,"unread":1,"head":8,"new":true}'),
    { t: 'readack', rid: 'r8', conv: 'c-ab', read: 7, unread: 1, head: 8, new: true }, 'unknown fields are ignored');
  assert.deepEqual(parseServerFrame('{"t":"unread","conv":"c-ab","read":8,"unread":0,"head":8}'),
    { t: 'unread', conv: 'c-ab', read: 8, unread: 0, head: 8 });
  for (const bad of ['{"t":"unread","conv":"c-ab","read":"8","unread":0,"head":8}', '{"t":"unread","conv":"c-ab","read":8,"unread":-1,"head":8}',
    '{"t":"unread","conv":"c-ab","read":8,"unread":0,"head":8.5}', '{"t":"unread","read":8,"unread":0,"head":8}',
    '{"t":"readack","conv":"c-ab","read":8,"unread":0,"head":8}', '{"t":"readack","rid":"r1","conv":"c-ab","read":8,"unread":0}',
    '{"t":"unread","conv":"c-ab","read":9007199254740992,"unread":0,"head":8}']) {
    assert.equal(parseServerFrame(bad), null, bad);
  }
  const subbed = parseServerFrame('{"t":"subbed","rid":"r3","convs":[{"conv":"a","head":8,"delivered":7,"read":7,"unread":1},'
    + '{"conv":"b","head":2,"delivered":2,"read":1,"unread":"x"},{"conv":"c","head":3,"delivered":3}],"more":false}');
  assert.deepEqual(subbed, { t: 'subbed', rid: 'r3', more: false, convs: [{ conv: 'a', head: 8, delivered: 7, read: 7, unread: 1 },
    { conv: 'b', head: 2, delivered: 2 }, { conv: 'c', head: 3, delivered: 3 }] });
});

test('markRead is coalesced: one read in flight per conversation, calls meanwhile merge into one with the highest seq', async () => {
  const server = await FakeServer.start();
  const reads = new FakeReads();
  reads.add(...[1, 2, 3, 4, 5, 6].map((s) => ev('c-ab', s)), ev('c-cd', 1));
  const held: Array<() => void> = [];
  server.handler = (f, reply) => {
    if (f.t === 'sub') reply({ t: 'subbed', rid: f.rid, convs: [reads.entry('c-ab', 6), reads.entry('c-cd', 1)] });
    if (f.t === 'read') held.push(() => reply(reads.readack(f)));   // answered when the test says
    if (f.t === 'sync') reply({ t: 'synced', rid: f.rid, conv: f.conv, events: [], more: false, head: reads.head(f.conv as string) });
  };
  const c = await ImClient.open(base(server));
  await c.connect();
  assert.equal(c.unreadCount('c-ab'), 6);
  const first = c.markRead('c-ab', 3);
  await server.until(() => server.of('read').length === 1, 'the first read');
  const merged = [c.markRead('c-ab', 5), c.markRead('c-ab', 4)];
  const other = c.markRead('c-cd', 1);   // another conversation is not held back
  await server.until(() => server.of('read').length === 2, 'the read of the other conversation');
  await c.syncNow('c-ab');   // a request after the calls: anything they sent would have arrived before it
  assert.deepEqual(server.of('read').map((f) => `${f.conv}@${f.seq}`), ['c-ab@3', 'c-cd@1'], 'nothing more while a read is in flight');
  for (const release of held.splice(0)) release();   // c-ab@3 and c-cd@1 (within the request timeout: the follow-up waits 1 s)
  assert.deepEqual(await first, { conv: 'c-ab', read: 3, unread: 3, head: 6 });
  await server.until(() => server.of('read').length === 3, 'the follow-up');
  assert.deepEqual(server.of('read').map((f) => `${f.conv}@${f.seq}`), ['c-ab@3', 'c-cd@1', 'c-ab@5'], 'one follow-up, with the highest seq');
  for (const release of held.splice(0)) release();
  const states: ConvReadState[] = await Promise.all(merged);
  assert.deepEqual(states, [{ conv: 'c-ab', read: 5, unread: 1, head: 6 }, { conv: 'c-ab', read: 5, unread: 1, head: 6 }]);
  assert.deepEqual(await other, { conv: 'c-cd', read: 1, unread: 0, head: 1 });
  assert.equal(c.unreadCount('c-ab'), 1);
  assert.equal(c.totalUnread(), 1);
  assert.deepEqual(await c.markRead('c-ab', 4), { conv: 'c-ab', read: 5, unread: 1, head: 6 }, 'covered: resolved at once');
  assert.equal(server.of('read').length, 3);
  await c.close(); await server.close();
});

test('markRead: at most one read per conversation per interval, also for a call made after the answer', async () => {
  const server = await FakeServer.start();
  const reads = new FakeReads();
  reads.add(ev('c-ab', 1), ev('c-ab', 2), ev('c-ab', 3));
  server.handler = (f, reply) => {
    if (f.t === 'sub') reply({ t: 'subbed', rid: f.rid, convs: [reads.entry('c-ab', 3)] });
    if (f.t === 'read') reply(reads.readack(f));
  };
  const c = await ImClient.open(base(server));
  await c.connect();
  const t0 = performance.now();
  assert.deepEqual(await c.markRead('c-ab', 1), { conv: 'c-ab', read: 1, unread: 2, head: 3 });
  const second = c.markRead('c-ab', 2);
  await server.until(() => server.of('read').length === 2, 'the second read, once the interval has passed');
  const elapsed = performance.now() - t0;
  assert.ok(elapsed >= READ_INTERVAL_MS, `sent ${Math.round(elapsed)} ms after the first call: not before the interval since the first read`);
  assert.deepEqual(await second, { conv: 'c-ab', read: 2, unread: 1, head: 3 });
  await c.close(); await server.close();
});

test('markRead: a terminal code rejects, a retriable one is retried, a lost connection sends it again after the reconnect', async () => {
  const server = await FakeServer.start();
  const reads = new FakeReads();
  reads.add(ev('c-ab', 1), ev('c-ab', 2));
  let answer: 'unavailable' | 'drop-connection' | 'ok' = 'unavailable';
  server.handler = (f, reply) => {
    if (f.t === 'sub') reply({ t: 'subbed', rid: f.rid, convs: [reads.entry('c-ab', 2)] });
    if (f.t !== 'read') return;
    if (f.conv === 'c-x') reply({ t: 'error', rid: f.rid, code: 'NOT_MEMBER', msg: 'no' });
    else if (answer === 'unavailable') { answer = 'drop-connection'; reply({ t: 'error', rid: f.rid, code: 'UNAVAILABLE', msg: 'db' }); }
    else if (answer === 'drop-connection') { answer = 'ok'; for (const s of server.sockets) s.terminate(); }
    else reply(reads.readack(f));
  };
  const c = await ImClient.open(base(server));
  await c.connect();
  await assert.rejects(c.markRead('c-x', 1), (e: ImError) => e.code === 'NOT_MEMBER');
  assert.deepEqual(await c.markRead('c-ab', 2), { conv: 'c-ab', read: 2, unread: 0, head: 2 });
  assert.deepEqual(server.of('read').filter((f) => f.conv === 'c-ab').map((f) => f.seq), [2, 2, 2], 'UNAVAILABLE, lost, then answered');
  await server.until(() => server.of('sub').length === 2, 'the new connection\'s sub');
  const ac = new AbortController();
  c.disconnect();
  const aborted = c.markRead('c-ab', 5, { signal: ac.signal });
  ac.abort(new Error('the user left the conversation'));
  await assert.rejects(aborted, /left the conversation/);
  const pending = c.markRead('c-ab', 9);
  await c.close();
  await assert.rejects(pending, (e: ImError) => e.code === 'CLOSED');
  assert.equal(server.of('read').length, 4, 'an aborted read and one made offline before close were never sent');
  await server.close();
});

test('unread counts: the state\'s unread plus messages of others above its head, each once; a late older state is ignored', async () => {
  const server = await FakeServer.start();
  const reads = new FakeReads();
  reads.add(ev('c-ab', 1, 'u-bo', 'join'), ev('c-ab', 2), ev('c-ab', 3, 'u-ana'), ev('c-ab', 4), ev('c-ab', 5));
  reads.read('c-ab', 2);   // read on another device: 4 and 5 are unread
  server.catchup = true;
  server.handler = (f, reply) => {
    if (f.t === 'sub') reply({ t: 'subbed', rid: f.rid, convs: [reads.entry('c-ab')] });
    if (f.t === 'catchup') {
      reply({ t: 'caughtup', rid: f.rid, events: [1, 2, 3, 4, 5].map((s) => ({ ...ev('c-ab', s), ...(s === 1 ? { kind: 'join' } : {}),
        ...(s === 3 ? { sender: 'u-ana' } : {}) })), convs: [{ conv: 'c-ab', after: 0, upTo: 5 }], more: false });
    }
    if (f.t === 'sync') reply({ t: 'synced', rid: f.rid, conv: f.conv, events: [ev('c-ab', 6), ev('c-ab', 7, 'u-ana'),
      ev('c-ab', 8, 'u-cy', 'join')], more: false, head: 8 });
    if (f.t === 'ack') reply({ t: 'acked', rid: f.rid, conv: f.conv, delivered: f.seq });
  };
  const c = await ImClient.open(base(server));
  const told: string[] = [];
  c.on('unread', (conv, read, unread) => told.push(`${conv} read=${read} unread=${unread}`));
  const caughtUp = new Promise((r) => c.on('recovery', r));
  await c.connect();
  await caughtUp;
  assert.equal(c.cursor('c-ab'), 5);
  assert.equal(c.unreadCount('c-ab'), 2, 'the catch-up of events up to the state\'s head adds nothing');
  assert.deepEqual(c.readState('c-ab'), { read: 2, unread: 2, head: 5 });
  const stored = (seq: number) => server.until(() => c.cursor('c-ab') >= seq, `#${seq} stored`);
  server.push({ t: 'event', ev: ev('c-ab', 6) });   // above the head: counts
  await stored(6);
  assert.equal(c.unreadCount('c-ab'), 3);
  server.push({ t: 'event', ev: ev('c-ab', 6) });   // a duplicate
  server.push({ t: 'event', ev: ev('c-ab', 7, 'u-ana') });   // one's own
  server.push({ t: 'event', ev: ev('c-ab', 8, 'u-cy', 'join') });   // a join
  await stored(8);
  assert.equal(c.unreadCount('c-ab'), 3, 'duplicates, one\'s own messages and joins do not count');
  assert.equal(await c.syncNow('c-ab'), true);   // a sync page repeating 6 to 8
  assert.equal(c.unreadCount('c-ab'), 3, 'a sync page of held events counts nothing again');
  server.push({ t: 'event', ev: ev('c-ab', 9) });
  await stored(9);
  assert.equal(c.unreadCount('c-ab'), 4);
  assert.equal(c.totalUnread(), 4);
  // Another device read up to 6: the state at head 9 has 1 unread (#9).
  const lowered = unreadWhere(c, (conv, read) => conv === 'c-ab' && read === 6);
  server.push({ t: 'unread', conv: 'c-ab', read: 6, unread: 1, head: 9 });
  assert.deepEqual(await lowered, ['c-ab', 6, 1], 'the unread push lowers the count and tells the listener');
  assert.equal(c.unreadCount('c-ab'), 1);
  // States may arrive in any order: a lower read, or the same read with a lower head, is older and ignored.
  server.push({ t: 'unread', conv: 'c-ab', read: 4, unread: 3, head: 9 });
  server.push({ t: 'unread', conv: 'c-ab', read: 6, unread: 0, head: 8 });
  server.push({ t: 'event', ev: ev('c-ab', 10) });   // after them on the socket: they were handled when it is stored
  await stored(10);
  assert.deepEqual(c.readState('c-ab'), { read: 6, unread: 1, head: 9 }, 'the older states were not applied');
  assert.equal(c.unreadCount('c-ab'), 2);
  assert.ok(!told.some((t) => t.startsWith('c-ab read=4')), told.join('; '));
  const later = unreadWhere(c, (conv, read) => conv === 'c-ab' && read === 10);
  server.push({ t: 'unread', conv: 'c-ab', read: 10, unread: 0, head: 10 });
  assert.deepEqual(await later, ['c-ab', 10, 0]);
  server.push({ t: 'event', ev: ev('c-ab', 11) });
  await stored(11);
  assert.equal(c.unreadCount('c-ab'), 1);
  await server.until(() => told.at(-1) === 'c-ab read=10 unread=1', 'the listener told of #11');
  await c.close(); await server.close();
});

/** A memory store whose reads of pages can be held back, to store events while a recount is reading. */
class GatedPages extends MemoryStorage {
  pagesAsked = 0;
  private gate: Promise<void> | null = null;
  private open: () => void = () => {};
  hold(): void { this.gate = new Promise((r) => (this.open = r)); }
  release(): void { this.gate = null; this.open(); }
  override async page(conv: string, q: PageQuery): Promise<Event[]> {
    this.pagesAsked++;
    const gate = this.gate;
    if (gate) await gate;
    return super.page(conv, q);
  }
}

test('a read state whose head is below events held counts those above its head from the store, each once', async () => {
  const server = await FakeServer.start();
  server.handler = (f, reply) => {
    if (f.t === 'sub') reply({ t: 'subbed', rid: f.rid, convs: [{ conv: 'c-ab', head: 0, delivered: 0 }] });
    if (f.t === 'ack') reply({ t: 'acked', rid: f.rid, conv: f.conv, delivered: f.seq });
  };
  const storage = new GatedPages();
  const c = await ImClient.open(base(server, storage));
  await c.connect();
  for (const e of [ev('c-ab', 1), ev('c-ab', 2, 'u-ana'), ev('c-ab', 3), ev('c-ab', 4, 'u-bo', 'leave'), ev('c-ab', 5), ev('c-ab', 7)]) {
    server.push({ t: 'event', ev: e });
  }
  await server.until(() => c.cursor('c-ab') === 5 && c.unreadCount('c-ab') === 4, 'held');
  // A state taken at head 3 (read 1: #3 unread) reaches the device after it stored up to #7: #5 and #7 count on
  // top, read from the store; #6, stored while that read is under way, counts once.
  storage.hold();
  const applied = unreadWhere(c, (conv, read) => conv === 'c-ab' && read === 1);
  server.push({ t: 'unread', conv: 'c-ab', read: 1, unread: 1, head: 3 });
  await server.until(() => storage.pagesAsked > 0, 'the recount reading the store');
  const sixStored = new Promise((r) => c.on('event', (e) => { if (e.seq === 6) r(e); }));
  server.push({ t: 'event', ev: ev('c-ab', 6) });   // fills the gap, above the head
  await sixStored;   // durable: a read of the store from now on would see it
  storage.release();
  assert.deepEqual(await applied, ['c-ab', 1, 4]);
  assert.equal(c.cursor('c-ab'), 7);
  assert.equal(c.unreadCount('c-ab'), 4);
  await c.close(); await server.close();
});

for (const [name, make] of [
  ['sqlite', async () => { const f = path.join(await mkdtemp(path.join(tmpdir(), 'imjs-read-')), 'store.db'); return () => new SqliteStorage(f); }],
  ['indexeddb', async () => { const n = `imjs-read-${Math.random()}`; return () => new IndexedDbStorage(n); }],
] as Array<[string, () => Promise<() => Storage>]>) {
  test(`${name}: the read state and the count survive a restart, and counting goes on from the stored state`, async () => {
    const server = await FakeServer.start();
    const reads = new FakeReads();
    reads.add(ev('c-ab', 1), ev('c-ab', 2), ev('c-ab', 3));
    server.handler = (f, reply) => {
      if (f.t === 'sub') reply({ t: 'subbed', rid: f.rid, convs: [reads.entry('c-ab', 3)] });
      if (f.t === 'read') reply(reads.readack(f));
      if (f.t === 'sync') {
        reply({ t: 'synced', rid: f.rid, conv: f.conv, events: [1, 2, 3].map((s) => ev('c-ab', s)).filter((e) => e.seq > (f.after as number)),
          more: false, head: 3 });
      }
      if (f.t === 'ack') reply({ t: 'acked', rid: f.rid, conv: f.conv, delivered: f.seq });
    };
    const storage = await make();
    const c = await ImClient.open(base(server, storage()));
    await c.connect();
    await server.until(() => c.cursor('c-ab') === 3, 'synced');
    assert.equal(c.unreadCount('c-ab'), 3);
    assert.deepEqual(await c.markRead('c-ab', 1), { conv: 'c-ab', read: 1, unread: 2, head: 3 });
    server.push({ t: 'event', ev: ev('c-ab', 4) });
    reads.add(ev('c-ab', 4));
    await server.until(() => c.unreadCount('c-ab') === 3, 'counted');
    await c.close();
    const again = await ImClient.open(base(server, storage()));   // not connected: what it shows is what it stored
    assert.equal(again.unreadCount('c-ab'), 3);
    assert.equal(again.totalUnread(), 3);
    assert.deepEqual(again.readState('c-ab'), { read: 1, unread: 2, head: 3 });
    assert.deepEqual((await again.listConversations()).map((x) => [x.conv, x.read, x.unread]), [['c-ab', 1, 3]]);
    await again.close(); await server.close();
  });
}

test('a store from before read state: its local count stands until the server\'s read state, which is the truth', async () => {
  const server = await FakeServer.start();
  const reads = new FakeReads();
  reads.add(ev('c-ab', 1), ev('c-ab', 2), ev('c-ab', 3));
  server.handler = (f, reply) => {
    if (f.t === 'sub') reply({ t: 'subbed', rid: f.rid, convs: [reads.entry('c-ab', 3)] });
  };
  const storage = new MemoryStorage();
  // Written by the previous SDK: the app's local read mark at 3 (nothing unread), never told to the server.
  const old = { conv: 'c-ab', cursor: 3, held: [], last: ev('c-ab', 3), readMark: 3, unread: 0 } as unknown as ConvRecord;
  await storage.write([{ op: 'events', events: [1, 2, 3].map((s) => ev('c-ab', s)) }, { op: 'conv', rec: old }]);
  const c = await ImClient.open(base(server, storage));
  assert.equal(c.unreadCount('c-ab'), 0);
  assert.equal(c.readState('c-ab'), null);
  const fromServer = unreadWhere(c, (conv) => conv === 'c-ab');
  await c.connect();
  assert.deepEqual(await fromServer, ['c-ab', 0, 3], 'the server\'s read cursor (0) replaces the local mark');
  const rec = (await storage.load()).convs[0] as ConvRecord & { readMark?: number };
  assert.deepEqual([rec.readState, rec.unread, rec.readMark], [{ read: 0, unread: 3, head: 3 }, 3, undefined]);
  await c.close(); await server.close();
});
