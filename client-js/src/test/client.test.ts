import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocket } from 'ws';
import { ImClient, ImError, MemoryStorage, checkBody, type ClientOptions, type Event, type StoreOp } from '../index.js';
import { FakeServer, msg } from './fake-server.js';

/** A store whose writes can be held back, to see what the client does before a write is durable. */
class GatedStorage extends MemoryStorage {
  writes: StoreOp[][] = [];
  private gate: Promise<void> = Promise.resolve();
  private open: () => void = () => {};
  hold(): void { this.gate = new Promise((r) => (this.open = r)); }
  release(): void { this.open(); }
  override async write(ops: StoreOp[]): Promise<Event[]> { await this.gate; this.writes.push(ops); return super.write(ops); }
}

async function client(server: FakeServer, extra: Partial<ClientOptions> = {}): Promise<ImClient> {
  return ImClient.open({ url: server.url, token: 't', storage: new MemoryStorage(), webSocket: WebSocket as never,
    reconnectMinMs: 5, reconnectMaxMs: 20, requestTimeoutMs: 1000, ...extra });
}

const subbed = (convs: object[] = []) => (f: Record<string, unknown>, reply: (o: object) => void) => {
  if (f.t === 'sub') reply({ t: 'subbed', rid: f.rid, convs });
};

test('a body the server would refuse as terminal is refused locally', () => {
  for (const b of ['', 'a\u0000b', 'x'.repeat(16_385), '\ud800']) assert.throws(() => checkBody(b), ImError);
  checkBody('é'.repeat(8192));
});

test('send writes the outbox entry durably before the first attempt, and drops it once sent', async () => {
  const server = await FakeServer.start();
  const storage = new GatedStorage();
  server.handler = (f, reply) => {
    subbed()(f, reply);
    if (f.t === 'send') reply({ t: 'sent', rid: f.rid, conv: f.conv, seq: 3, mid: 'm', dup: false, epoch: 1 });
  };
  const c = await ImClient.open({ url: server.url, token: 't', storage, webSocket: WebSocket as never });
  await c.connect();
  storage.hold();
  const sent = c.send('c-ab', 'hi');
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(server.of('send').length, 0, 'nothing sent before the outbox write is durable');
  storage.release();
  assert.equal((await sent).seq, 3);
  assert.deepEqual(storage.writes.find((w) => w[0].op === 'outboxPut'), [{ op: 'outboxPut', entry: { cmid: server.of('send')[0].cmid, conv: 'c-ab', body: 'hi', internalErrors: 0 } }]);
  assert.deepEqual(c.outbox(), []);
  await c.close(); await server.close();
});

test('a terminal code drops the entry; retriable codes are retried with the same cmid; INTERNAL is capped', async () => {
  const server = await FakeServer.start();
  let unavailable = 2;
  server.handler = (f, reply) => {
    subbed()(f, reply);
    if (f.t !== 'send') return;
    if (f.conv === 'c-x') reply({ t: 'error', rid: f.rid, code: 'NOT_MEMBER', msg: 'no' });
    else if (f.conv === 'c-bug') reply({ t: 'error', rid: f.rid, code: 'INTERNAL', msg: 'bug' });
    else if (unavailable-- > 0) reply({ t: 'error', rid: f.rid, code: 'UNAVAILABLE', msg: 'db' });
    else reply({ t: 'sent', rid: f.rid, conv: f.conv, seq: 4, mid: 'm', dup: false, epoch: 1 });
  };
  const c = await client(server, { maxInternalErrors: 3 });
  await c.connect();
  await assert.rejects(c.send('c-x', 'a'), (e: ImError) => e.code === 'NOT_MEMBER');
  assert.equal(server.of('send').filter((f) => f.conv === 'c-x').length, 1, 'a terminal code is not retried');
  await assert.rejects(c.send('c-bug', 'a'), (e: ImError) => e.code === 'INTERNAL');
  assert.equal(server.of('send').filter((f) => f.conv === 'c-bug').length, 3, 'INTERNAL retried up to the cap');
  assert.equal((await c.send('c-ok', 'a')).seq, 4);
  const oks = server.of('send').filter((f) => f.conv === 'c-ok');
  assert.equal(oks.length, 3);
  assert.equal(new Set(oks.map((f) => f.cmid)).size, 1, 'the same cmid on every attempt');
  assert.deepEqual(c.outbox(), []);
  await c.close(); await server.close();
});

test('a lost reply is resent with the same cmid', async () => {
  const server = await FakeServer.start();
  let first = true;
  server.handler = (f, reply) => {
    subbed()(f, reply);
    if (f.t !== 'send') return;
    if (first) { first = false; return; }   // the reply is lost
    reply({ t: 'sent', rid: f.rid, conv: f.conv, seq: 3, mid: 'm', dup: true, epoch: 1 });
  };
  const c = await client(server, { requestTimeoutMs: 100 });
  await c.connect();
  const r = await c.send('c-ab', 'hi');
  assert.equal(r.dup, true);
  const sends = server.of('send');
  assert.equal(sends.length, 2);
  assert.equal(sends[0].cmid, sends[1].cmid);
  await c.close(); await server.close();
});

test('acks go out only after the store is durable, coalesced into one', async () => {
  const server = await FakeServer.start();
  const storage = new GatedStorage();
  server.handler = (f, reply) => {
    subbed([{ conv: 'c-ab', head: 0, delivered: 0 }])(f, reply);
    if (f.t === 'ack') reply({ t: 'acked', rid: f.rid, conv: f.conv, delivered: f.seq });
  };
  const c = await ImClient.open({ url: server.url, token: 't', storage, webSocket: WebSocket as never, ackDelayMs: 50 });
  await c.connect();
  await server.until(() => server.of('sub').length === 1, 'sub');
  storage.hold();
  for (const s of [1, 2, 3]) server.push({ t: 'event', ev: msg('c-ab', s) });
  await new Promise((r) => setTimeout(r, 150));
  assert.deepEqual(server.of('ack'), [], 'no ack before the store is durable');
  storage.release();
  await server.until(() => server.of('ack').length > 0, 'an ack');
  await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(server.of('ack').map((f) => f.seq), [3], 'one coalesced ack of the contiguous cursor');
  assert.equal(c.cursor('c-ab'), 3);
  await c.close(); await server.close();
});

test('a gap and a hint each start a sync from the cursor; a page with more:false moves the cursor to head', async () => {
  const server = await FakeServer.start();
  server.handler = (f, reply) => {
    subbed([{ conv: 'c-ab', head: 1, delivered: 0 }])(f, reply);
    if (f.t === 'sync') {
      const after = f.after as number;
      const events = after < 3 ? [msg('c-ab', after + 1)] : [];
      reply({ t: 'synced', rid: f.rid, conv: 'c-ab', events, more: after + 1 < 3, head: after < 3 ? 3 : 6 });
    }
    if (f.t === 'ack') reply({ t: 'acked', rid: f.rid, conv: f.conv, delivered: f.seq });
  };
  const c = await client(server);
  await c.connect();
  await server.until(() => c.cursor('c-ab') === 3, 'the subbed head synced (offline catch-up)');
  server.push({ t: 'event', ev: msg('c-ab', 5) });   // 4 is missing: a gap
  await server.until(() => server.of('sync').some((f) => f.after === 3), 'a sync after the gap');
  await server.until(() => c.cursor('c-ab') === 6, 'the page with more:false reported head 6');
  server.push({ t: 'hint', conv: 'c-ab', head: 9, why: 'sweep' });
  await server.until(() => server.of('sync').some((f) => f.after === 6), 'a sync after the hint');
  assert.deepEqual((await c.page('c-ab')).map((e) => e.seq), [1, 2, 3, 5]);
  await c.close(); await server.close();
});

test('sub is paged until more is false; the conversations behind are caught up by catchup pages, not one sync each', async () => {
  const server = await FakeServer.start();
  server.catchup = true;
  const convs = ['c-1', 'c-2', 'c-3'];
  server.handler = (f, reply) => {
    if (f.t === 'sub') {
      const i = f.after === undefined ? 0 : convs.indexOf(f.after as string) + 1;
      reply({ t: 'subbed', rid: f.rid, convs: [{ conv: convs[i], head: 2, delivered: 0 }], more: i < 2 });
    }
    if (f.t === 'catchup') {
      const first = f.after === undefined;
      if (!first) assert.equal(f.after, 'c-2/2', 'the after of the previous page, unchanged');
      // c-1 seq 1, 2; c-2 seq 1 | then c-2 seq 2 (cut at the page end), c-3 seq 2 only (1 is not visible: the cursor passes it)
      const page = first
        ? { events: [msg('c-1', 1), msg('c-1', 2), msg('c-2', 1), msg('c-2', 2)], convs: [{ conv: 'c-1', after: 0, upTo: 2 }, { conv: 'c-2', after: 0, upTo: 2 }], more: true, after: 'c-2/2' }
        : { events: [msg('c-3', 2)], convs: [{ conv: 'c-3', after: 0, upTo: 2 }], more: false };
      reply({ t: 'caughtup', rid: f.rid, ...page });
    }
    if (f.t === 'ack') reply({ t: 'acked', rid: f.rid, conv: f.conv, delivered: f.seq });
  };
  const c = await client(server);
  const recovered = new Promise<unknown>((r) => c.on('recovery', r));
  await c.connect();
  assert.deepEqual(await recovered, { reconnect: false, recovered: true, synced: convs, failed: [], reset: [] });
  for (const conv of convs) assert.equal(c.cursor(conv), 2, conv);
  assert.deepEqual(server.of('sub').map((f) => f.after ?? null), [null, 'c-1', 'c-2'], 'one sub per page, each after the last conv');
  assert.equal(server.of('catchup').length, 2);
  assert.equal(server.of('sync').length, 0, 'no sync per conversation');
  await server.until(() => convs.every((conv) => server.of('ack').some((a) => a.conv === conv && a.seq === 2)), 'an ack of each head');
  await c.close(); await server.close();
});

test('a catchup the server does not know falls back to one sync per conversation behind', async () => {
  const server = await FakeServer.start();   // answers catchup UNKNOWN_TYPE
  server.handler = (f, reply) => {
    subbed([{ conv: 'c-ab', head: 1, delivered: 0 }])(f, reply);
    if (f.t === 'sync') reply({ t: 'synced', rid: f.rid, conv: 'c-ab', events: [msg('c-ab', 1)], more: false, head: 1 });
    if (f.t === 'ack') reply({ t: 'acked', rid: f.rid, conv: f.conv, delivered: f.seq });
  };
  const c = await client(server);
  await c.connect();
  await server.until(() => c.cursor('c-ab') === 1, 'synced after the refused catchup');
  assert.equal(server.of('catchup').length, 1);
  await c.close(); await server.close();
});

test('an ack refused CURSOR_AHEAD is owed and sent again once a head covers it', async () => {
  const server = await FakeServer.start();
  let head = 0;
  server.handler = (f, reply) => {
    subbed([{ conv: 'c-ab', head: 0, delivered: 0 }])(f, reply);
    if (f.t === 'ack') {
      if ((f.seq as number) > head) reply({ t: 'error', rid: f.rid, code: 'CURSOR_AHEAD', msg: 'ahead' });
      else reply({ t: 'acked', rid: f.rid, conv: f.conv, delivered: f.seq });
    }
    if (f.t === 'sync') reply({ t: 'synced', rid: f.rid, conv: 'c-ab', events: [], more: false, head });
  };
  const c = await client(server);
  await c.connect();
  await server.until(() => server.of('sub').length === 1, 'sub');
  server.push({ t: 'event', ev: msg('c-ab', 1) });
  await server.until(() => server.of('ack').length === 1, 'the refused ack');
  head = 1;
  server.push({ t: 'hint', conv: 'c-ab', head: 1, why: 'sweep' });
  await server.until(() => server.of('ack').length === 2, 'the owed ack sent again');
  assert.equal(server.of('ack')[1].seq, 1);
  await c.close(); await server.close();
});

test('BAD_TOKEN stops the client: no reconnect with the same token', async () => {
  const server = await FakeServer.start();
  server.handler = () => {};
  const c = await ImClient.open({ url: server.url, token: 'bad', storage: new MemoryStorage(), webSocket: WebSocket as never, reconnectMinMs: 5 });
  const fatal: string[] = [];
  c.on('fatal', (e) => fatal.push(e.code));
  await assert.rejects(c.connect(), (e: ImError) => e.code === 'BAD_TOKEN');
  await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(fatal, ['BAD_TOKEN']);
  assert.equal(server.sockets.length, 1, 'not reconnected');
  await c.close(); await server.close();
});

test('stream() yields only stored events and ends cleanly when the client closes', async () => {
  const server = await FakeServer.start();
  server.handler = (f, reply) => {
    subbed([{ conv: 'c-ab', head: 0, delivered: 0 }])(f, reply);
    if (f.t === 'ack') reply({ t: 'acked', rid: f.rid, conv: f.conv, delivered: f.seq });
  };
  const c = await client(server);
  const seen: unknown[] = [];
  const done = (async () => { for await (const e of c.stream()) seen.push(e); })();
  await c.connect();
  await server.until(() => server.of('sub').length === 1, 'sub');
  for (const s of [1, 2]) server.push({ t: 'event', ev: msg('c-ab', s) });
  await server.until(() => seen.length === 2, 'two events streamed');
  await c.close();
  await done;
  assert.deepEqual(seen.map((e) => (e as { seq?: number } | undefined)?.seq), [1, 2], 'no undefined value before the end');
  await server.close();
});
