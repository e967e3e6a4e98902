// Typing and receipts (docs/protocol.md, "Typing" and "Receipts") against the fake server: typing written one-way
// and throttled per conversation, a typing push told as an event, receipts answered in order or refused, strict
// decoding of both frames.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocket } from 'ws';
import { ImClient, ImError, MemoryStorage, parseServerFrame, type ClientOptions } from '../index.js';
import { FakeServer } from './fake-server.js';

const base = (server: FakeServer): ClientOptions => ({ url: server.url, token: 't', storage: new MemoryStorage(),
  webSocket: WebSocket as never, reconnectMinMs: 5, reconnectMaxMs: 20, requestTimeoutMs: 300 });

/** A client subscribed to a fake that answers `sub` with `c-ab` and `g1` (both empty), `sync` at once, the rest with `handler`. */
async function connected(handler: FakeServer['handler'] = () => {}): Promise<{ server: FakeServer; c: ImClient }> {
  const server = await FakeServer.start();
  server.handler = (f, reply) => {
    if (f.t === 'sub') reply({ t: 'subbed', rid: f.rid, convs: [{ conv: 'c-ab', head: 0, delivered: 0 }, { conv: 'g1', head: 0, delivered: 0 }] });
    else if (f.t === 'sync') reply({ t: 'synced', rid: f.rid, conv: f.conv, events: [], more: false, head: 0 });
    else handler(f, reply);
  };
  const c = await ImClient.open(base(server));
  await c.connect();
  return { server, c };
}

/** The requests the client waits a reply for (none may be left by a typing). */
const pending = (c: ImClient) => (c as unknown as { core: { requests: { size: number } } }).core.requests.size;

test('typing and receipts frames are decoded strictly', () => {
  assert.deepEqual(parseServerFrame('{"t":"typing","conv":"c-ab","user":"u-bo"}'), { t: 'typing', conv: 'c-ab', user: 'u-bo' });
  const ok = '{"t":"receipts","rid":"r4","conv":"g1","receipts":[{"seq":7,"members":2,"read":1,"devices":3,"delivered":3}]}';
  assert.deepEqual(parseServerFrame(ok), { t: 'receipts', rid: 'r4', conv: 'g1', receipts: [{ seq: 7, members: 2, read: 1, devices: 3, delivered: 3 }] });
  for (const bad of ['{"t":"typing","conv":"c-ab"}', '{"t":"typing","conv":"c-ab","user":7}', '{"t":"typing","rid":"r1","conv":"c-ab","user":"u-bo"}',
    '{"t":"receipts","conv":"g1","receipts":[]}', '{"t":"receipts","rid":"r4","conv":"g1"}',
    '{"t":"receipts","rid":"r4","conv":"g1","receipts":[{"seq":7,"members":2,"read":1,"devices":3}]}',
    '{"t":"receipts","rid":"r4","conv":"g1","receipts":[{"seq":7,"members":2,"read":-1,"devices":3,"delivered":3}]}']) {
    assert.equal(parseServerFrame(bad), null, bad);
  }
});

test('typing is written at most once per 2 s per conversation, only while online, and leaves no pending request', async () => {
  const { server, c } = await connected();
  const first = Date.now();
  assert.equal(c.typing('c-ab'), true);
  assert.equal(c.typing('c-ab'), false, 'within 2 s');
  assert.equal(c.typing('g1'), true, 'another conversation has its own window');
  assert.equal(pending(c), 0, 'nothing waits for a reply');
  while (!c.typing('c-ab')) {
    assert.ok(Date.now() - first < 4000, 'written again once 2 s passed');
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.ok(Date.now() - first >= 2000, `written again after ${Date.now() - first} ms`);
  await server.until(() => server.of('typing').length === 3, 'the typings');
  await c.syncNow('c-ab');   // a request after the typings: anything more would have arrived before it
  assert.deepEqual(server.of('typing').map((f) => f.conv), ['c-ab', 'g1', 'c-ab']);
  assert.ok(server.of('typing').every((f) => typeof f.rid === 'string'), 'a typing carries a rid (for its error)');
  server.push({ t: 'error', rid: server.of('typing')[0]!.rid, code: 'NOT_MEMBER', msg: 'no' });   // a refusal: nobody waits for it
  await c.syncNow('c-ab');
  assert.equal(c.connectionState, 'online');
  assert.equal(pending(c), 0);
  c.disconnect();
  await new Promise((r) => setTimeout(r, 2000));
  assert.equal(c.typing('c-ab'), false, 'offline: nothing written');
  await c.close(); await server.close();
});

test('a typing push fires the typing event with the conversation and the user', async () => {
  const { server, c } = await connected();
  const seen = new Promise<[string, string]>((resolve) => c.on('typing', (conv, user) => resolve([conv, user])));
  server.push({ t: 'typing', conv: 'g1', user: 'u-bo' });
  assert.deepEqual(await seen, ['g1', 'u-bo']);
  assert.deepEqual(await c.page('g1'), [], 'nothing is stored');
  await c.close(); await server.close();
});

test('receipts resolve in the order asked; a refusal rejects with its code, no answer with TIMEOUT, bad seqs locally', async () => {
  const { server, c } = await connected((f, reply) => {
    if (f.t !== 'receipts') return;
    const seqs = f.seqs as number[];
    if (seqs.includes(4)) reply({ t: 'error', rid: f.rid, code: 'NOT_SENDER', msg: 'seq 4 is not your message' });
    else if (seqs.includes(5)) return;   // lost
    else reply({ t: 'receipts', rid: f.rid, conv: f.conv, receipts: seqs.map((seq) => ({ seq, members: 2, read: seq === 7 ? 1 : 0, devices: 3, delivered: seq === 7 ? 3 : 1, extra: true })) });
  });
  assert.deepEqual(await c.receipts('g1', [9, 7]), [{ seq: 9, members: 2, read: 0, devices: 3, delivered: 1 },
    { seq: 7, members: 2, read: 1, devices: 3, delivered: 3 }]);
  assert.deepEqual(server.of('receipts').map((f) => f.seqs), [[9, 7]]);
  await assert.rejects(c.receipts('g1', [7, 4]), (e: unknown) => e instanceof ImError && e.code === 'NOT_SENDER');
  await assert.rejects(c.receipts('g1', [5]), (e: unknown) => e instanceof ImError && e.code === 'TIMEOUT');
  for (const bad of [[], [1, 1], [0], [1.5], Array.from({ length: 101 }, (_, i) => i + 1)]) {
    await assert.rejects(c.receipts('g1', bad), RangeError, JSON.stringify(bad));
  }
  assert.equal(server.of('receipts').length, 3, 'bad seqs are not sent');
  assert.equal(pending(c), 0);
  c.disconnect();
  await assert.rejects(c.receipts('g1', [7]), (e: unknown) => e instanceof ImError && e.code === 'CLOSED');
  await c.close(); await server.close();
});
