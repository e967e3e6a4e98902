/**
 * Integration tests against a real platform (`./im platform`, as .ci/run starts it): IM_URL is its
 * HTTP address (e.g. http://127.0.0.1:8080), IM_ADMIN_URL its gateway's admin listener (e.g.
 * http://127.0.0.1:8081), IM_ADMIN_TOKEN its admin token. Skipped without IM_URL and IM_ADMIN_URL.
 * Each test creates its own users, devices and conversation, so runs do not share state.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { WebSocket } from 'ws';
import { ImClient as Client, MemoryStorage } from '../index.js';
import { openNodeClient, type ImClient, type SentResult } from '../node.js';

const URL_ = process.env.IM_URL;
const ADMIN_URL = process.env.IM_ADMIN_URL;
const ADMIN = process.env.IM_ADMIN_TOKEN ?? '';
const skip = URL_ && ADMIN_URL ? false : 'IM_URL or IM_ADMIN_URL is not set (start a platform, see client-js/README.md)';
const WS = URL_ ? URL_.replace(/^http/, 'ws').replace(/\/$/, '') + '/ws' : '';

async function admin(method: string, p: string, body?: object): Promise<any> {
  const r = await fetch(ADMIN_URL!.replace(/\/$/, '') + p, {
    method, headers: { Authorization: `Bearer ${ADMIN}`, 'Content-Type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${text}`);
  return JSON.parse(text);
}

async function until(cond: () => boolean | Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Users ana and bo with one device each in a new direct conversation (join events seq 1 and 2). */
async function cast() {
  const id = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
  const users = [`u-ana-${id}`, `u-bo-${id}`];
  const tokens: string[] = [];
  for (const u of users) {
    await admin('POST', '/admin/users', { user: u, name: u });
    tokens.push((await admin('POST', '/admin/devices', { user: u, device: `d-${u}` })).token);
  }
  const conv = `c-${id}`;
  await admin('POST', '/admin/conversations', { conv, kind: 'direct', members: users });
  const dir = await mkdtemp(path.join(tmpdir(), 'imjs-it-'));
  const open = (who: 0 | 1, extra: Partial<Parameters<typeof openNodeClient>[0]> = {}) =>
    openNodeClient({ url: WS, token: tokens[who], file: path.join(dir, `${who}.json`), reconnectMinMs: 50, reconnectMaxMs: 500, ...extra });
  const delivered = async (who: 0 | 1): Promise<number> => {
    const c = await admin('GET', `/admin/conversations/${conv}/cursors`);
    return c.devices.find((d: { device: string }) => d.device === `d-${users[who]}`)?.delivered ?? 0;
  };
  const head = async (): Promise<number> => (await admin('GET', `/admin/conversations/${conv}`)).head;
  return { conv, open, delivered, head, users, tokens };
}

/** {@link cast} with ana's and bo's clients open and connected. */
async function online() {
  const c = await cast();
  const ana = await c.open(0);
  const bo = await c.open(1);
  await ana.connect();
  await bo.connect();
  return { ...c, ana, bo };
}

const nextSent = (c: ImClient) => new Promise<SentResult>((r) => { const off = c.on('sent', (s) => { off(); r(s); }); });

test('offline catch-up: a device that was away syncs what it missed and acks it', { skip }, async () => {
  const { conv, open, delivered } = await cast();
  const ana = await open(0);
  await ana.connect();
  await ana.send(conv, 'one');
  const last = await ana.send(conv, 'two');
  const bo = await open(1);
  await bo.connect();
  await until(() => bo.cursor(conv) === last.seq, 'bo synced');
  assert.deepEqual((await bo.page(conv, { limit: 1000 })).filter((e) => e.kind === 'msg').map((e) => e.body), ['one', 'two']);
  await until(async () => (await delivered(1)) === last.seq, 'bo acked the head');
  await ana.close(); await bo.close();
});

test('a device away from several conversations catches up with catchup pages, not one sync each', { skip }, async () => {
  const { conv, open, users, tokens } = await cast();
  const convs = [conv, `${conv}-g1`, `${conv}-g2`];
  for (const g of convs.slice(1)) await admin('POST', '/admin/conversations', { conv: g, kind: 'group', members: users });
  const ana = await open(0);
  await ana.connect();
  const heads = new Map<string, number>();
  for (const c of convs) {
    await ana.send(c, `first in ${c}`);
    heads.set(c, (await ana.send(c, `second in ${c}`)).seq);
  }
  const sent: string[] = [];
  class Recording extends WebSocket {
    override send(data: unknown, ...rest: unknown[]): void {
      sent.push((JSON.parse(String(data)) as { t: string }).t);
      (super.send as (...a: unknown[]) => void)(data, ...rest);
    }
  }
  const bo = await Client.open({ url: WS, token: tokens[1]!, storage: new MemoryStorage(), webSocket: Recording as never });
  const recovery = new Promise<{ recovered: boolean; synced: string[] }>((r) => bo.on('recovery', r));
  await bo.connect();
  const r = await recovery;
  assert.equal(r.recovered, true);
  assert.deepEqual([...r.synced].sort(), [...convs].sort());
  for (const c of convs) assert.equal(bo.cursor(c), heads.get(c), c);
  assert.ok(sent.includes('catchup'), `frames: ${sent}`);
  assert.equal(sent.filter((t) => t === 'sync').length, 0, `no sync per conversation: ${sent}`);
  await ana.close(); await bo.close();
});

test('crash point 1: killed after the outbox write, before the first attempt; the restarted SDK sends it once', { skip }, async () => {
  const { conv, open, head } = await cast();
  const ana = await open(0);   // never connected
  const queued = new Promise<void>((r) => ana.on('queued', () => r()));
  void ana.send(conv, 'from the outbox').catch(() => {});
  await queued;
  ana._crash();
  const again = await open(0);
  assert.equal(again.outbox().length, 1, 'the entry survived in the file');
  const sent = nextSent(again);
  await again.connect();
  const r = await sent;
  assert.equal(r.dup, false);
  assert.equal(await head(), 3, 'exactly one message committed');
  assert.equal(again.outbox().length, 0);
  await again.close();
});

test('crash point 2: the server committed, the reply was lost, the SDK was killed; the restart gets dup:true with the same seq', { skip }, async () => {
  const { conv, open, head } = await cast();
  const ana = await open(0, { dropIncoming: (f) => f.t === 'sent', requestTimeoutMs: 60_000 });
  await ana.connect();
  void ana.send(conv, 'committed before the crash').catch(() => {});
  await until(async () => (await head()) === 3, 'the server committed');
  ana._crash();
  const again = await open(0);
  const sent = nextSent(again);
  await again.connect();
  const r = await sent;
  assert.equal(r.dup, true);
  assert.equal(r.seq, 3, 'the original seq');
  assert.equal(await head(), 3, 'no second message');
  await again.close();
});

test('crash point 3: the receiver stored an event and was killed before its ack; the restart acks without duplicating', { skip }, async () => {
  const { conv, open, delivered } = await cast();
  const ana = await open(0);
  const bo = await open(1, { ackDelayMs: 600_000 });   // the ack never leaves before the crash
  const durable: number[] = [];
  bo.on('event', (e) => durable.push(e.seq));   // emitted once the store is durable
  await ana.connect();
  await bo.connect();
  const r = await ana.send(conv, 'stored, not acked');
  await until(() => durable.includes(r.seq), 'bo stored it durably');
  bo._crash();
  assert.ok((await delivered(1)) < r.seq, 'the server has no ack of it');
  const again = await open(1);
  assert.equal(again.cursor(conv), r.seq, 'the store survived in the file');
  await again.connect();
  await until(async () => (await delivered(1)) === r.seq, 'the restarted SDK acked its durable cursor');
  assert.equal((await again.page(conv, { limit: 1000 })).filter((e) => e.seq === r.seq).length, 1);
  await ana.close(); await again.close();
});

test('a lost reply: the SDK resends with the same cmid and gets the original seq with dup:true', { skip }, async () => {
  const { conv, open, head } = await cast();
  let dropped = 0;
  const ana = await open(0, { requestTimeoutMs: 500, dropIncoming: (f) => f.t === 'sent' && dropped++ === 0 });
  await ana.connect();
  const r = await ana.send(conv, 'the first reply is lost');
  assert.equal(r.dup, true);
  assert.equal(r.seq, 3);
  assert.equal(await head(), 3);
  await ana.close();
});

test('a gap: a lost push is repaired by sync when the next push arrives', { skip }, async () => {
  const { conv, open } = await cast();
  let drops = 0;
  const ana = await open(0);
  const bo = await open(1, { dropIncoming: (f) => f.t === 'event' && f.ev.kind === 'msg' && drops++ === 0 });
  await ana.connect();
  await bo.connect();
  await until(() => bo.cursor(conv) === 2, 'bo holds the joins');
  await ana.send(conv, 'lost push');
  const second = await ana.send(conv, 'reveals the gap');
  await until(() => bo.cursor(conv) === second.seq, 'bo repaired the gap');
  assert.deepEqual((await bo.page(conv, { limit: 1000 })).filter((e) => e.kind === 'msg').map((e) => e.body), ['lost push', 'reveals the gap']);
  await ana.close(); await bo.close();
});

test('a hint: with every push lost, the sweeper hints and the SDK syncs', { skip }, async () => {
  const { conv, open, delivered } = await cast();
  const ana = await open(0);
  const bo = await open(1, { dropIncoming: (f) => f.t === 'event' });
  const hints: number[] = [];
  bo.on('hint', (_c, h) => hints.push(h));
  await ana.connect();
  await bo.connect();
  await until(() => bo.cursor(conv) === 2, 'bo holds the joins');
  const r = await ana.send(conv, 'only a hint tells');
  await until(() => bo.cursor(conv) === r.seq, 'bo synced after the hint', 30_000);
  assert.ok(hints.length > 0, 'a hint arrived');
  await until(async () => (await delivered(1)) === r.seq, 'and acked');
  await ana.close(); await bo.close();
});

test('edit and recall: bo sees the new text, then the tombstone, also from a sync after a restart; refusals are terminal', { skip }, async () => {
  const { conv, open, ana, bo } = await online();
  const told: string[] = [];
  bo.on('edited', (c, seq, body) => told.push(`edited ${seq} ${body}`));
  bo.on('recalled', (c, seq) => told.push(`recalled ${seq}`));
  const m = await ana.send(conv, 'meet at 5');
  await assert.rejects(bo.edit(conv, m.seq, 'not mine'), (e: Error & { code?: string }) => e.code === 'NOT_SENDER');
  const e = await ana.edit(conv, m.seq, 'meet at 6');
  await until(() => bo.cursor(conv) === e.seq, 'bo holds the edit');
  await until(() => told.includes(`edited ${m.seq} meet at 6`), 'edited');
  assert.deepEqual((await bo.page(conv)).filter((x) => x.kind === 'msg').map((x) => [x.body, x.edited]), [['meet at 6', e.seq]]);
  await bo.close();
  const r = await ana.recall(conv, m.seq);
  await assert.rejects(ana.edit(conv, m.seq, 'again'), (x: Error & { code?: string }) => x.code === 'RECALLED');
  assert.deepEqual(ana.failed().map((f) => [f.target, f.code, f.body]), [[m.seq, 'RECALLED', '']], 'the refused edit keeps no text');
  const bo2 = await open(1);
  await bo2.connect();
  await until(() => bo2.cursor(conv) >= r.seq, 'bo synced the recall');
  const page = (await bo2.page(conv)).filter((x) => x.kind === 'msg');
  assert.deepEqual(page.map((x) => [x.seq, x.body, x.recalled]), [[m.seq, '', true]]);
  assert.deepEqual(await bo2.search('meet'), []);
  assert.equal(bo2.unreadCount(conv), 1, 'the message, not its edit or recall');
  await ana.close(); await bo2.close();
});

test('typing reaches the other member, not the typer; receipts count bo\'s read and store, NOT_SENDER for his seq', { skip }, async () => {
  const { conv, ana, bo } = await online();
  const typing: string[] = [];
  ana.on('typing', (c, user) => typing.push(`ana sees ${c} ${user}`));
  bo.on('typing', (c, user) => typing.push(`bo sees ${c} ${user}`));
  assert.equal(bo.typing(conv), true);
  assert.equal(bo.typing(conv), false, 'throttled');
  await until(() => typing.length > 0, 'ana is told');
  const m = await ana.send(conv, 'read me');
  await until(() => bo.cursor(conv) >= m.seq, 'bo stores it');
  await bo.markRead(conv, m.seq);
  await until(async () => (await ana.receipts(conv, [m.seq]))[0]!.delivered === 1, 'bo\'s device acked it');
  assert.deepEqual(await ana.receipts(conv, [m.seq]), [{ seq: m.seq, members: 1, read: 1, devices: 1, delivered: 1 }]);
  await assert.rejects(ana.receipts(conv, [1]), (e: Error & { code?: string }) => e.code === 'NOT_SENDER');
  assert.deepEqual(typing, [`ana sees ${conv} ${bo.identity!.user}`], 'never the typer\'s own devices');
  await ana.close(); await bo.close();
});
