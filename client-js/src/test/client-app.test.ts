// What a UI built on the SDK needs (the gateway's web client is one): the store picked by identity,
// going offline on purpose, reconnect progress, how events arrived, the subscribed conversations,
// ack answers, sends refused for good kept until dismissed, and a local copy ahead of the server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { WebSocket } from 'ws';
import { ImClient, ImError, MemoryStorage, type ClientOptions, type ConvRecord, type Identity } from '../index.js';
import { openNodeClient } from '../node.js';
import { FakeReads, FakeServer, msg } from './fake-server.js';

const base = (server: FakeServer): ClientOptions => ({ url: server.url, token: 't', storage: new MemoryStorage(),
  webSocket: WebSocket as never, reconnectMinMs: 5, reconnectMaxMs: 20, requestTimeoutMs: 1000 });

/** Every state change of `c` as `state/reason/code`. */
const stateLog = (c: ImClient): string[] => {
  const states: string[] = [];
  c.on('state', (st, d) => states.push(`${st}${d.reason ? `/${d.reason}` : ''}${d.code ? `/${d.code}` : ''}`));
  return states;
};

const rec = (conv: string, cursor: number): ConvRecord => ({ conv, cursor, held: [], last: null, readState: null, unread: 0 });

const subbed = (convs: object[] = []) => (f: Record<string, unknown>, reply: (o: object) => void) => {
  if (f.t === 'sub') reply({ t: 'subbed', rid: f.rid, convs });
};
/** A server with no conversations that commits every send as `seq`. */
const committing = (seq: number) => (f: Record<string, unknown>, reply: (o: object) => void) => {
  subbed()(f, reply);
  if (f.t === 'send') reply({ t: 'sent', rid: f.rid, conv: f.conv, seq, mid: 'm', dup: false, epoch: 1 });
};

test('a storage function picks the store by the identity from authed and the client adopts its state', async () => {
  const server = await FakeServer.start();
  server.handler = subbed([{ conv: 'c-ab', head: 2, delivered: 2 }]);
  const stored = new MemoryStorage();
  await stored.write([{ op: 'events', events: [msg('c-ab', 1), msg('c-ab', 2)] }, { op: 'conv', rec: rec('c-ab', 2) }]);
  const asked: Identity[] = [];
  const c = await ImClient.open({ ...base(server), storage: (who) => { asked.push(who); return stored; } });
  assert.equal(c.identity, null);
  await assert.rejects(c.send('c-ab', 'too early'), (e: ImError) => e.code === 'CLOSED', 'no store before authed');
  await c.connect();
  assert.deepEqual(asked, [{ user: 'u-ana', device: 'd-ana', epoch: 1 }]);
  assert.deepEqual(c.identity, { user: 'u-ana', device: 'd-ana', epoch: 1 });
  assert.deepEqual((await c.page('c-ab')).map((e) => e.seq), [1, 2], 'the picked store was loaded');
  assert.equal(server.of('sync').length, 0, 'the loaded cursor is at the head: nothing to sync');
    await c.close(); await server.close();
});

test('a store that cannot be opened stops the client with STORAGE; a later connect() tries again', async () => {
  const server = await FakeServer.start();
  server.handler = subbed();
  let broken = true;
  const c = await ImClient.open({ ...base(server), storage: () => { if (broken) throw new Error('quota'); return new MemoryStorage(); } });
  const fatal: string[] = [];
  c.on('fatal', (e) => fatal.push(e.code));
  await assert.rejects(c.connect(), (e: ImError) => e.code === 'STORAGE' && e.message.includes('quota'));
  assert.deepEqual(fatal, ['STORAGE']);
  assert.equal(c.connectionState, 'failed');
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(server.sockets.length, 1, 'stopped: no reconnect');
  broken = false;
  await c.connect();
  assert.equal(c.connectionState, 'online');
  await c.close(); await server.close();
});

test('disconnect stays offline until connect; sends made offline go out after it with their cmid', async () => {
  const server = await FakeServer.start();
  server.handler = committing(1);
  const c = await ImClient.open(base(server));
  const states: string[] = [];
  c.on('state', (s) => states.push(s));
  await c.connect();
  c.disconnect();
  assert.equal(c.connectionState, 'offline');
  const sent = c.send('c-ab', 'written offline');
  await new Promise((r) => setTimeout(r, 150));
  assert.equal(server.sockets.length, 1, 'no reconnect after disconnect');
  assert.equal(server.of('send').length, 0);
  assert.equal(c.outbox().length, 1);
  await c.connect();
  assert.equal((await sent).seq, 1);
  assert.equal(server.sockets.length, 2);
  assert.deepEqual(states, ['connecting', 'online', 'offline', 'connecting', 'online']);
  await c.close(); await server.close();
});

test('disconnect while a reconnect is pending cancels it', async () => {
  const server = await FakeServer.start();
  server.handler = subbed();
  const c = await ImClient.open({ ...base(server), reconnectMinMs: 200, reconnectMaxMs: 200 });
  await c.connect();
  let pending = false;
  c.on('reconnecting', () => { pending = true; });
  server.sockets[0].close(1011, 'bye');
  await server.until(() => pending, 'the reconnect scheduled');
  c.disconnect();
  await new Promise((r) => setTimeout(r, 400));
  assert.equal(server.sockets.length, 1, 'no reconnect after disconnect');
  assert.equal(c.connectionState, 'offline');
  await c.close(); await server.close();
});

test('a lost connection reports each reconnect attempt with its delay and the close code', async () => {
  const server = await FakeServer.start();
  server.handler = subbed();
  const c = await ImClient.open(base(server));
  const attempts: Array<[number, number, number]> = [];
  c.on('reconnecting', (a, d, code) => attempts.push([a, d, code]));
  await c.connect();
  server.sockets[0].close(1011, 'bye');
  await server.until(() => server.sockets.length === 2 && c.connectionState === 'online', 'reconnected');
  assert.equal(attempts.length, 1);
  assert.equal(attempts[0][0], 1);
  assert.ok(attempts[0][1] >= 2.5 && attempts[0][1] <= 5, `first delay within [min/2, min]: ${attempts[0][1]}`);
  assert.equal(attempts[0][2], 1011);
  await c.close(); await server.close();
});

test('events say whether a push or a sync brought them; subbed and acked answers are reported', async () => {
  const server = await FakeServer.start();
  server.handler = (f, reply) => {
    subbed([{ conv: 'c-ab', head: 1, delivered: 0 }])(f, reply);
    if (f.t === 'sync') reply({ t: 'synced', rid: f.rid, conv: 'c-ab', events: [msg('c-ab', 1)], more: false, head: 1 });
    if (f.t === 'ack') reply({ t: 'acked', rid: f.rid, conv: f.conv, delivered: f.seq });
  };
  const c = await ImClient.open(base(server));
  const got: string[] = [];
  const acked: string[] = [];
  const subs: string[] = [];
  c.on('event', (e, source) => got.push(`${e.seq}:${source}`));
  c.on('acked', (conv, d) => acked.push(`${conv}@${d}`));
  c.on('subscribed', (convs) => subs.push(convs.map((x) => `${x.conv}/${x.head}`).join()));
  await c.connect();
  await server.until(() => acked.includes('c-ab@1'), 'the ack of the synced event');
  server.push({ t: 'event', ev: msg('c-ab', 2) });
  await server.until(() => acked.includes('c-ab@2'), 'the ack of the push');
  assert.deepEqual(got, ['1:sync', '2:push']);
  assert.deepEqual(subs, ['c-ab/1']);
  assert.deepEqual(c.conversations(), [{ conv: 'c-ab', head: 1, delivered: 0 }]);
  await c.close(); await server.close();
});

test('a send refused for good is kept durably in failed() until dismissed, and never resent', async () => {
  const server = await FakeServer.start();
  server.handler = (f, reply) => {
    subbed()(f, reply);
    if (f.t === 'send') reply({ t: 'error', rid: f.rid, code: 'INTERNAL', msg: 'bug' });
  };
  const storage = new MemoryStorage();
  const c = await ImClient.open({ ...base(server), storage, maxInternalErrors: 2 });
  await c.connect();
  await assert.rejects(c.send('c-ab', 'hits a bug'), (e: ImError) => e.code === 'INTERNAL');
  assert.deepEqual(c.failed().map((e) => [e.body, e.code, e.internalErrors]), [['hits a bug', 'INTERNAL', 2]]);
  assert.match(c.failed()[0].msg, /bug/);
  await c.close();
  const again = await ImClient.open({ ...base(server), storage });
  await again.connect();
  assert.equal(again.failed().length, 1, 'still reported after a restart');
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(server.of('send').length, 2, 'not resent after the restart');
  await again.dismissFailed(again.failed()[0].cmid);
  assert.deepEqual((await storage.load()).failed, [], 'the dismissal is durable');
  await again.close(); await server.close();
});

test('a local copy ahead of the server head (a reset platform) is dropped and synced afresh', async () => {
  const server = await FakeServer.start();
  server.handler = (f, reply) => {
    subbed([{ conv: 'c-ab', head: 1, delivered: 0 }])(f, reply);
    if (f.t === 'sync') reply({ t: 'synced', rid: f.rid, conv: 'c-ab', events: [msg('c-ab', 1, 'new history')], more: false, head: 1 });
    if (f.t === 'ack') reply({ t: 'acked', rid: f.rid, conv: f.conv, delivered: f.seq });
  };
  const storage = new MemoryStorage();
  await storage.write([{ op: 'events', events: [msg('c-ab', 1, 'old'), msg('c-ab', 2), msg('c-ab', 3)] }, { op: 'conv', rec: rec('c-ab', 3) }]);
  const c = await ImClient.open({ ...base(server), storage });
  const resets: string[] = [];
  c.on('reset', (conv, head) => resets.push(`${conv}@${head}`));
  await c.connect();
  await server.until(() => server.of('ack').length === 1, 'the ack after the fresh sync');
  assert.deepEqual(resets, ['c-ab@1']);
  assert.equal(server.of('sync')[0].after, 0, 'synced from the start');
  assert.deepEqual((await c.page('c-ab')).map((e) => e.body), ['new history']);
  assert.equal(c.cursor('c-ab'), 1);
  assert.equal(server.of('ack')[0].seq, 1, 'never an ack above the server head');
  await c.close(); await server.close();
});

test('the conversation list: last event and unread messages from others above the read state, newest activity first', async () => {
  const server = await FakeServer.start();
  const reads = new FakeReads();
  server.handler = (f, reply) => {
    subbed([{ conv: 'c-ab', head: 0, delivered: 0 }, { conv: 'c-cd', head: 0, delivered: 0 }])(f, reply);
    if (f.t === 'ack') reply({ t: 'acked', rid: f.rid, conv: f.conv, delivered: f.seq });
    if (f.t === 'read') reply(reads.readack(f));
  };
  const storage = new MemoryStorage();
  const c = await ImClient.open({ ...base(server), storage });
  await c.connect();
  const ev = (conv: string, seq: number, sender: string, at: number, kind: 'msg' | 'join' = 'msg') =>
    ({ ...msg(conv, seq), sender, at, kind });
  const push = (e: ReturnType<typeof ev>) => { reads.add(e); server.push({ t: 'event', ev: e }); };
  push(ev('c-ab', 1, 'u-bo', 10, 'join'));    // not a message: not unread
  push(ev('c-ab', 2, 'u-bo', 11));
  push(ev('c-ab', 3, 'u-ana', 12));           // one's own: not unread
  push(ev('c-ab', 4, 'u-bo', 13));
  push(ev('c-cd', 1, 'u-cy', 20));
  await server.until(() => c.cursor('c-ab') === 4 && c.cursor('c-cd') === 1, 'stored');
  const list = async () => (await c.listConversations()).map((x) => `${x.conv} last#${x.last?.seq} unread=${x.unread}`);
  assert.deepEqual(await list(), ['c-cd last#1 unread=1', 'c-ab last#4 unread=2']);
  assert.deepEqual(await c.markRead('c-ab', 2), { conv: 'c-ab', read: 2, unread: 1, head: 4 });
  assert.deepEqual(await list(), ['c-cd last#1 unread=1', 'c-ab last#4 unread=1'], 'counted above the read state');
  assert.deepEqual(await c.markRead('c-ab', 1), { conv: 'c-ab', read: 2, unread: 1, head: 4 }, 'covered: the state as it is');
  assert.equal(server.of('read').length, 1, 'a read the state covers sends nothing');
  assert.equal((await c.listConversations())[1].read, 2, 'the read cursor never moves down');
  await c.markRead('c-cd', 1);
  push(ev('c-ab', 5, 'u-bo', 30));
  await server.until(() => c.cursor('c-ab') === 5, 'stored');
  assert.deepEqual(await list(), ['c-ab last#5 unread=2', 'c-cd last#1 unread=0']);
  await c.close();
  const again = await ImClient.open({ ...base(server), storage });
  assert.deepEqual((await again.listConversations()).map((x) => [x.conv, x.unread, x.read]), [['c-ab', 2, 2], ['c-cd', 0, 1]],
    'read states and unread counts are durable');
  assert.deepEqual((await again.page('c-ab', { before: 5, limit: 2 })).map((e) => e.seq), [3, 4]);
  await again.close(); await server.close();
});

test('after each subscribe, recovery says whether every conversation behind its head caught up', async () => {
  const server = await FakeServer.start();
  let refuse = false;
  let head = 2;
  server.handler = (f, reply) => {
    subbed([{ conv: 'c-ab', head, delivered: 0 }])(f, reply);
    if (f.t === 'sync') {
      if (refuse) reply({ t: 'error', rid: f.rid, code: 'NOT_MEMBER', msg: 'left' });
      else reply({ t: 'synced', rid: f.rid, conv: 'c-ab', events: [msg('c-ab', head - 1), msg('c-ab', head)], more: false, head });
    }
    if (f.t === 'ack') reply({ t: 'acked', rid: f.rid, conv: f.conv, delivered: f.seq });
  };
  const c = await ImClient.open(base(server));
  const seen: string[] = [];
  c.on('recovery', (r) => seen.push(`${r.reconnect ? 're' : 'first'}:${r.recovered}:${r.synced}:${r.failed}`));
  await c.connect();
  await server.until(() => seen.length === 1, 'the first recovery');
  head = 4;
  server.sockets[0].close(1011, 'bye');
  await server.until(() => seen.length === 2, 'recovery after the reconnect');
  assert.equal(c.cursor('c-ab'), 4);
  refuse = true;
  head = 6;
  server.sockets[1].close(1011, 'bye');
  await server.until(() => seen.length === 3, 'recovery after the second reconnect');
  assert.deepEqual(seen, ['first:true:c-ab:', 're:true:c-ab:', 're:false::c-ab']);
  await c.close(); await server.close();
});

test('state changes say why; an aborted send leaves the outbox and is never sent; an aborted connect goes offline', async () => {
  const server = await FakeServer.start();
  server.handler = committing(1);
  const c = await ImClient.open(base(server));
  const states = stateLog(c);
  await c.connect();
  server.sockets[0].close(4000, 'going away');
  await server.until(() => server.sockets.length === 2 && c.connectionState === 'online', 'reconnected');
  c.disconnect();
  const ac = new AbortController();
  const sent = c.send('c-ab', 'typed offline, then cancelled', { signal: ac.signal });
  await new Promise<void>((r) => { const off = c.on('queued', () => { off(); r(); }); });
  assert.equal(c.outbox().length, 1);
  ac.abort(new Error('the user deleted it'));
  await assert.rejects(sent, /the user deleted it/);
  assert.deepEqual(c.outbox(), [], 'out of the outbox');
  const ac2 = new AbortController();
  const connecting = c.connect({ signal: ac2.signal });
  ac2.abort(new Error('gave up'));
  await assert.rejects(connecting, /gave up/);
  assert.equal(c.connectionState, 'offline');
  await c.connect();
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(server.of('send').length, 0, 'the cancelled send was never attempted');
  await c.close();
  assert.deepEqual(states.slice(0, 6), ['connecting', 'online', 'offline/lost/4000', 'connecting', 'online', 'offline/disconnect/1000']);
  assert.equal(states.at(-1), 'closed/close');
  await assert.rejects(c.connect(), (e: ImError) => e.code === 'CLOSED', 'a closed client released its store');
  await assert.rejects(c.send('c-ab', 'after close'), (e: ImError) => e.code === 'CLOSED');
  await server.close();
});

test('a connection replaced by a newer one of the same device (4009) is not reconnected until the app asks', async () => {
  const server = await FakeServer.start();
  server.handler = committing(1);
  const c = await ImClient.open(base(server));
  const states = stateLog(c);
  await c.connect();
  server.sockets[0].close(4009, 'replaced by a newer connection of this device');
  await server.until(() => c.connectionState === 'offline', 'offline after the replacement');
  await new Promise((r) => setTimeout(r, 300));   // well past the first backoff step (base(server) uses short ones)
  assert.equal(server.sockets.length, 1, 'no reconnect of its own');
  assert.deepEqual(states, ['connecting', 'online', 'offline/replaced/4009']);
  await c.connect();
  assert.equal(server.sockets.length, 2, 'the app takes the device back with connect()');
  await c.close(); await server.close();
});

test('a send cancelled while its attempt is in flight stays out of the store when that attempt then fails', async () => {
  const server = await FakeServer.start();
  let answer: (() => void) | null = null;
  server.handler = (f, reply) => {
    subbed()(f, reply);
    if (f.t === 'send') answer = () => reply({ t: 'error', rid: f.rid, code: 'INTERNAL', msg: 'bug' });
  };
  const storage = new MemoryStorage();
  const c = await ImClient.open({ ...base(server), storage });
  await c.connect();
  const ac = new AbortController();
  const sent = c.send('c-ab', 'cancelled in flight', { signal: ac.signal });
  await server.until(() => answer !== null, 'the attempt on the wire');
  ac.abort(new Error('cancelled'));
  await assert.rejects(sent, /cancelled/);
  answer!();
  await new Promise((r) => setTimeout(r, 100));
  await c.close();
  assert.deepEqual((await storage.load()).outbox, [], 'not written back by the failed attempt');
  assert.equal(server.of('send').length, 1, 'not retried');
  await server.close();
});

test('a client killed after its outbox write restarts from its SQLite file in the same process and sends it', async () => {
  const server = await FakeServer.start();
  server.handler = committing(7);
  const file = path.join(await mkdtemp(path.join(tmpdir(), 'imjs-crash-')), 'ana.db');
  const open = () => openNodeClient({ url: server.url, token: 't', file, reconnectMinMs: 5, reconnectMaxMs: 20 });
  const c = await open();   // never connected
  const queued = new Promise<void>((r) => c.on('queued', () => r()));
  void c.send('c-ab', 'from the outbox').catch(() => {});
  await queued;
  c._crash();
  const again = await open();
  assert.deepEqual(again.outbox().map((e) => e.body), ['from the outbox'], 'the entry survived in the file');
  const sent = new Promise<number>((r) => again.on('sent', (s) => r(s.seq)));
  await again.connect();
  assert.equal(await sent, 7);
  assert.deepEqual(again.outbox(), []);
  await again.close(); await server.close();
});
