// The local stores record by record: the same behaviour from the SQLite store (Node), the IndexedDB store
// (browser, via fake-indexeddb) and the memory store; SQLite's crash recovery (a process killed after
// durable writes, in the middle of a transaction, with a torn WAL tail), a damaged file reported, and
// memory that does not grow with the history held.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { openSync, readFileSync, writeSync, closeSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import 'fake-indexeddb/auto';
import { MemoryStorage, type ConvRecord, type Event, type Storage } from '../index.js';
import { SqliteStorage } from '../node.js';
import { IndexedDbStorage } from '../browser.js';
import { msg } from './fake-server.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const tmp = () => mkdtemp(path.join(tmpdir(), 'imjs-store-'));
const rec = (conv: string, cursor: number, last: Event | null = null): ConvRecord => ({ conv, cursor, held: [], last, readState: null, unread: 0 });
let idbN = 0;

const backends: Array<[string, () => Promise<() => Storage>]> = [
  ['sqlite', async () => { const f = path.join(await tmp(), 'store.db'); return () => new SqliteStorage(f); }],
  ['indexeddb', async () => { const n = `imjs-conformance-${++idbN}`; return () => new IndexedDbStorage(n); }],
  ['memory', async () => { const m = new MemoryStorage(); return () => m; }],
];

for (const [name, make] of backends) {
  test(`${name}: batches are read back after a reopen; an event already held is kept; a dropped conversation is gone`, async () => {
    const open = await make();
    let s = open();
    assert.deepEqual(await s.load(), { me: null, convs: [], outbox: [], failed: [] }, 'a new store is empty');
    await s.write([{ op: 'me', user: 'u-ana' }, { op: 'outboxPut', entry: { cmid: 'k1', conv: 'c', body: 'one', internalErrors: 0 } },
      { op: 'outboxPut', entry: { cmid: 'k2', conv: 'c', body: 'two', internalErrors: 0 } }]);
    await s.write([{ op: 'outboxPut', entry: { cmid: 'k1', conv: 'c', body: 'one', internalErrors: 2 } },
      { op: 'events', events: [msg('c', 1), msg('c', 2)] }, { op: 'conv', rec: rec('c', 2, msg('c', 2)) },
      { op: 'events', events: [msg('d', 1)] }, { op: 'conv', rec: rec('d', 1) }]);
    await s.write([{ op: 'events', events: [msg('c', 2, 'a second copy')] }, { op: 'outboxDel', cmid: 'k2' },
      { op: 'failedPut', entry: { cmid: 'k2', conv: 'c', body: 'two', internalErrors: 0, code: 'NOT_MEMBER', msg: 'no' } },
      { op: 'dropConv', conv: 'd' }]);
    await s.close();
    s = open();
    const l = await s.load();
    assert.equal(l.me, 'u-ana');
    assert.deepEqual(l.outbox.map((e) => [e.cmid, e.internalErrors]), [['k1', 2]], 'updated in place');
    assert.deepEqual(l.failed.map((e) => e.code), ['NOT_MEMBER']);
    assert.deepEqual(l.convs.map((c) => [c.conv, c.cursor, c.last?.seq]), [['c', 2, 2]]);
    assert.deepEqual((await s.page('c', { limit: 10 })).map((e) => e.body), ['m1', 'm2'], 'the first copy of seq 2 is kept');
    assert.deepEqual(await s.page('d', { limit: 10 }), []);
    await s.close();
  });

  test(`${name}: a bulk join keeps its count, in a page and as a conversation's last event, after a reopen`, async () => {
    const open = await make();
    let s = open();
    await s.load();
    const bulk: Event = { conv: 'g', seq: 1, kind: 'join', mid: 'j1', sender: 'u-ana', body: '', at: 1, count: 500 };
    const one: Event = { conv: 'g', seq: 2, kind: 'join', mid: 'j2', sender: 'u-cy', body: '', at: 2 };
    await s.write([{ op: 'events', events: [bulk, one] }, { op: 'conv', rec: rec('g', 2, bulk) }]);
    await s.close();
    s = open();
    const l = await s.load();
    assert.equal(l.convs[0].last?.count, 500);
    assert.deepEqual(await s.page('g', { limit: 10 }), [bulk, one], 'count on the bulk join only');
    await s.close();
  });

  test(`${name}: pages before and after a seq, and search`, async () => {
    const open = await make();
    const s = open();
    await s.load();
    const events = Array.from({ length: 120 }, (_, i) => msg('c-page', i + 1, i % 10 === 0 ? `Lunch at ${i}?` : `m${i + 1}`));
    await s.write([{ op: 'events', events: events.slice(60) }, { op: 'events', events: events.slice(0, 60) },
      { op: 'events', events: [msg('c-other', 1, 'lunch 100% sure_')] }]);
    const seqs = (es: Event[]) => es.map((e) => e.seq);
    assert.deepEqual(seqs(await s.page('c-page', { limit: 3 })), [118, 119, 120], 'the newest');
    assert.deepEqual(seqs(await s.page('c-page', { before: 50, limit: 3 })), [47, 48, 49]);
    assert.deepEqual(seqs(await s.page('c-page', { after: 50, limit: 3 })), [51, 52, 53]);
    assert.deepEqual(seqs(await s.page('c-page', { before: 3, limit: 50 })), [1, 2]);
    assert.deepEqual(seqs(await s.page('c-page', { after: 119, limit: 50 })), [120]);
    assert.deepEqual(seqs(await s.page('c-none', { limit: 5 })), []);
    const found = await s.search('LUNCH', { limit: 50 });
    assert.deepEqual(found.map((e) => `${e.conv}#${e.seq}`), ['c-other#1', ...Array.from({ length: 12 }, (_, i) => `c-page#${i * 10 + 1}`)],
      'ASCII case-insensitive, in (conv, seq) order');
    assert.deepEqual(seqs(await s.search('lunch', { conv: 'c-page', limit: 2 })), [1, 11], 'one conversation, up to the limit');
    assert.deepEqual((await s.search('100% sure_', { limit: 5 })).map((e) => e.conv), ['c-other'], '% and _ are literal');
    assert.deepEqual(await s.search('0%', { conv: 'c-page', limit: 5 }), []);
    const ac = new AbortController();
    ac.abort(new Error('stop'));
    await assert.rejects(s.search('lunch', { limit: 5, signal: ac.signal }), /stop/);
    await s.close();
  });
}

test('sqlite: a process killed after durable writes loses none of them; one killed mid-transaction leaves nothing of it', async () => {
  const dir = await tmp();
  for (const mode of ['after-writes', 'mid-transaction']) {
    const file = path.join(dir, `${mode}.db`);
    const out = await child(file, 25, mode);
    assert.equal(out.match(/durable/g)?.length, 25, out);
    const s = new SqliteStorage(file);   // the dead process's lock is cleared, SQLite recovers the WAL
    const l = await s.load();
    assert.deepEqual(l.convs.map((c) => [c.conv, c.cursor]), [['c-crash', 25]], mode);
    assert.deepEqual((await s.page('c-crash', { limit: 100 })).map((e) => e.seq), Array.from({ length: 25 }, (_, i) => i + 1));
    assert.deepEqual(await s.page('c-big', { limit: 5 }), [], 'the uncommitted transaction is not there');
    await s.close();
  }
});

test('sqlite: a torn tail of the log after a crash is dropped and the store opens at the last whole commit', async () => {
  const file = path.join(await tmp(), 'torn.db');
  await child(file, 10, 'after-writes');
  // Tear the last batch's commit in its first frame, as a crash in the middle of writing it would. With
  // synchronous=FULL SQLite pads a commit to the sector with copies of its last frame, so the last batch
  // is the last group of frames ending in a commit frame that holds more than one page.
  const wal = readFileSync(`${file}-wal`);
  const pageSize = wal.readUInt32BE(8);
  const frame = 24 + pageSize;
  const groups: Array<{ start: number; frames: number }> = [];
  let start = 32;
  for (let off = 32; off + frame <= wal.length; off += frame) {
    if (wal.readUInt32BE(off + 4) !== 0) {   // a commit frame: it ends a transaction
      groups.push({ start, frames: (off + frame - start) / frame });
      start = off + frame;
    }
  }
  const last = groups.filter((g) => g.frames > 1).at(-1)!;
  assert.ok(last && groups.length >= 10, `the commits are in the WAL (${groups.length} groups)`);
  truncateSync(`${file}-wal`, last.start + 24 + pageSize / 2);
  const s = new SqliteStorage(file);
  const l = await s.load();
  assert.deepEqual(l.convs.map((c) => c.cursor), [9], 'the torn commit is gone, every earlier one is there');
  assert.deepEqual((await s.page('c-crash', { limit: 100 })).map((e) => e.seq), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
  await s.close();
});

test('sqlite: a damaged file is reported with an error naming it, never read as an empty store', async () => {
  const dir = await tmp();
  const garbage = path.join(dir, 'garbage.db');
  writeFileSync(garbage, Buffer.alloc(8192, 0x5a));
  await assert.rejects(new SqliteStorage(garbage).load(), (e: Error) => e.message.includes(garbage) && /not a SQLite database/.test(e.message));


  const file = path.join(dir, 'damaged.db');
  const s = new SqliteStorage(file);
  await s.load();
  for (let b = 0; b < 20; b++) {
    await s.write([{ op: 'events', events: Array.from({ length: 100 }, (_, i) => msg(`c-${b}`, i + 1, 'x'.repeat(300))) }, { op: 'conv', rec: rec(`c-${b}`, 100) }]);
  }
  await s.close();   // checkpoints the WAL into the database file
  const fd = openSync(file, 'r+');
  for (let page = 3; page < statSync(file).size / 4096; page += 2) writeSync(fd, Buffer.alloc(4096, 0xa5), 0, 4096, page * 4096);
  closeSync(fd);
  const again = new SqliteStorage(file);
  await assert.rejects(async () => {
    await again.load();
    for (let b = 0; b < 20; b++) await again.page(`c-${b}`, { limit: 100 });
  }, (e: Error) => e.message.includes(file) && /malformed|corrupt|not a database/i.test(e.message), 'the damage is reported');
  await again.close();
});

test('sqlite: the JSON state file of 0.1 is converted on open, its outbox kept; a conversion cut short is redone', async () => {
  const dir = await tmp();
  const old = { outbox: [{ cmid: 'k', conv: 'c', body: 'typed before the upgrade', internalErrors: 1 }],
    failed: [{ cmid: 'f', conv: 'c', body: 'refused', internalErrors: 0, code: 'NOT_MEMBER', msg: 'no' }],
    events: { c: { 1: msg('c', 1), 2: msg('c', 2), 4: msg('c', 4) } }, cursors: { c: 2, e: 7 } };
  for (const cutShort of [false, true]) {
    const file = path.join(dir, `state-${cutShort}.json`);
    if (cutShort) {   // killed after the rename, while building the database
      writeFileSync(`${file}.v0.json`, JSON.stringify(old));
      writeFileSync(`${file}.converting`, 'half a database');
    } else {
      writeFileSync(file, JSON.stringify(old));
    }
    const s = new SqliteStorage(file);
    const l = await s.load();
    assert.deepEqual(l.outbox.map((e) => [e.body, e.internalErrors]), [['typed before the upgrade', 1]]);
    assert.deepEqual(l.failed.map((e) => e.code), ['NOT_MEMBER']);
    assert.deepEqual(l.convs.map((c) => [c.conv, c.cursor, c.held, c.last?.seq ?? null, c.readState, c.unread]).sort(),
      [['c', 2, [4], 4, null, 0], ['e', 7, [], null, null, 0]]);
    assert.deepEqual((await s.page('c', { limit: 10 })).map((e) => e.seq), [1, 2, 4]);
    await s.close();
    assert.equal(JSON.parse(readFileSync(`${file}.v0.json`, 'utf8')).outbox.length, 1, 'the old file is kept beside it');
    assert.equal(readFileSync(file).subarray(0, 15).toString('latin1'), 'SQLite format 3');
  }
});

test('sqlite: a long search yields to the event loop and stops when its signal is aborted', async () => {
  const s = new SqliteStorage(path.join(await tmp(), 'search.db'));
  await s.load();
  for (let c = 0; c < 300; c++) {
    await s.write([{ op: 'events', events: Array.from({ length: 200 }, (_, i) => msg(`c-${c}`, i + 1, `a body of some length ${i}`)) }]);
  }
  const ac = new AbortController();
  let ticks = 0;
  const timer = setInterval(() => { if (++ticks === 2) ac.abort(new Error('the user typed another word')); }, 1);
  try {
    await assert.rejects(s.search('no such words', { limit: 50, signal: ac.signal }), /another word/);
  } finally {
    clearInterval(timer);
  }
  assert.deepEqual(await s.search('no such words', { limit: 50 }), [], 'unaborted, it scans everything');
  await s.close();
});

test('sqlite: a store is held by one process: a second open in this process is refused', async () => {
  const file = path.join(await tmp(), 'one.db');
  const a = new SqliteStorage(file);
  await a.load();
  await assert.rejects(new SqliteStorage(file).load(), /already open in this process/);
  await a.close();
  const b = new SqliteStorage(file);
  await b.load();
  await b.close();
});

test('indexeddb: a version 1 database (the whole state in one record) is converted to records on open', async () => {
  const name = 'imjs-v1';
  await new Promise<void>((resolve, reject) => {
    const req = indexedDB.open(name, 1);
    req.onupgradeneeded = () => req.result.createObjectStore('state');
    req.onsuccess = () => {
      const tx = req.result.transaction('state', 'readwrite');
      tx.objectStore('state').put({ outbox: [{ cmid: 'k', conv: 'c', body: 'pending', internalErrors: 1 }],
        events: { c: { 1: msg('c', 1), 2: msg('c', 2), 4: msg('c', 4) } }, cursors: { c: 2, e: 7 } }, 'state');
      tx.oncomplete = () => { req.result.close(); resolve(); };
      tx.onerror = () => reject(tx.error);
    };
    req.onerror = () => reject(req.error);
  });
  const s = new IndexedDbStorage(name);
  const l = await s.load();
  assert.deepEqual(l.outbox.map((e) => e.body), ['pending']);
  assert.deepEqual(l.convs.map((c) => [c.conv, c.cursor, c.held, c.last?.seq ?? null, c.readState, c.unread]).sort(),
    [['c', 2, [4], 4, null, 0], ['e', 7, [], null, null, 0]]);
  assert.deepEqual((await s.page('c', { limit: 10 })).map((e) => e.seq), [1, 2, 4]);
  await s.close();
  await IndexedDbStorage.delete(name);
  const fresh = new IndexedDbStorage(name);
  assert.deepEqual((await fresh.load()).convs, [], 'deleted');
  await fresh.close();
});

test('sqlite: opening a store of 100,000 events, listing and paging it keeps the heap flat', async () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const file = path.join(await tmp(), 'big.db');
  const s = new SqliteStorage(file);
  await s.load();
  for (let c = 0; c < 100; c++) {
    const events = Array.from({ length: 1000 }, (_, i) => msg(`c-${c}`, i + 1, `message ${i + 1} of conversation ${c}, some words to make it a realistic size`));
    await s.write([{ op: 'events', events }, { op: 'conv', rec: rec(`c-${c}`, 1000, events[999]) }]);
  }
  await s.close();
  gc();
  const before = process.memoryUsage().heapUsed;
  const again = new SqliteStorage(file);
  const l = await again.load();
  const pages = [];
  for (let c = 0; c < 100; c += 10) pages.push(await again.page(`c-${c}`, { before: 500, limit: 50 }));
  gc();
  const grew = process.memoryUsage().heapUsed - before;
  assert.equal(l.convs.length, 100);
  assert.ok(pages.every((p) => p.length === 50));
  // The events alone are ~12 MB as JSON: a store that loaded them would grow the heap by far more.
  assert.ok(grew < 4 * 1024 * 1024, `the heap grew by ${(grew / 1048576).toFixed(1)} MB`);
  await again.close();
});

/** Runs test-bin/crash-writer.js: `batches` durable batches, then SIGKILL (in the middle of a big transaction for mode mid-transaction). */
function child(file: string, batches: number, mode: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [path.join(here, '../test-bin/crash-writer.js'), file, String(batches), mode], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d) => (out += String(d)));
    p.stderr.on('data', (d) => (out += String(d)));
    p.on('error', reject);
    p.on('exit', (code, signal) => (signal === 'SIGKILL' ? resolve(out) : reject(new Error(`crash-writer exited ${code} ${signal}: ${out}`))));
  });
}

