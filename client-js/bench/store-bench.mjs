// The TypeScript SDK's local store on Node, measured through the client (docs/benchmarks.md, "TypeScript
// SDK local store"). Each case runs in a child process of its own (node --expose-gc) against a scripted
// WebSocket server in this process, so its heap and CPU are the client's alone.
//
//   node bench/store-bench.mjs [--sdk DIR] [--events 1000000] [--convs 1000] [--only case,case] [--timeout 300]
//
// --sdk is a compiled SDK (its dist/ folder; default ../dist): the same script measures an older version
// (e.g. a worktree of main) as long as it has openNodeClient / FileStorage or SqliteStorage.
// Cases: receive-empty and receive-held (1,000 pushed events into an empty store and into one holding 4,236), sends (200
// sequential sends with 4,236 events held), queued (1,400 sends queued at once, 4,236 held), big (a store
// of --events events across --convs conversations: time to open it, heap after, time to list the
// conversations, to page 50 events and to search every stored event for a word none holds); and, only
// when asked for with --only, platform-sends and platform-queued: the sends and queued cases against a
// real platform (IM_URL, IM_ADMIN_URL, IM_ADMIN_TOKEN; e.g. scripts/with-platform.sh node bench/store-bench.mjs --only
// platform-sends,platform-queued), where each committed message also comes back as a push and is stored.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { WebSocketServer } from 'ws';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const opt = (name, dflt) => { const i = args.indexOf(`--${name}`); return i >= 0 ? args[i + 1] : dflt; };
const SDK = path.resolve(opt('sdk', path.join(here, '../dist')));
const HELD = 4236;
const BODY = 'a message of a realistic length, about a hundred characters: lorem ipsum dolor sit amet, consectetur';

const ev = (conv, seq, sender = 'u-bo') => ({ conv, seq, kind: 'msg', mid: `mid-${conv}-${seq}`, sender, cmid: `k-${conv}-${seq}`, body: `${BODY} ${seq}`, at: 1_700_000_000_000 + seq });

// ------------------------------------------------------------------ the child: one case, one process

async function child(kase, dir, url) {
  const sdk = await import(pathToFileURL(path.join(SDK, 'node.js')).href);
  const isNew = typeof sdk.SqliteStorage === 'function';
  const file = path.join(dir, isNew ? 'store.db' : 'state.json');
  const mb = (b) => Math.round(b / 1048576 * 10) / 10;
  const heap = () => { gc(); gc(); return process.memoryUsage().heapUsed; };
  const cpu = (t0) => { const d = process.cpuUsage(t0); return Math.round((d.user + d.system) / 1000); };
  const open = (extra = {}) => sdk.openNodeClient({ url, token: 't', file, requestTimeoutMs: 60_000, ackDelayMs: 10, ...extra });

  /** A store of `n` events per conversation, written as the SDK's own format would hold it. */
  async function seed(convs, perConv) {
    if (isNew) {
      const s = new sdk.SqliteStorage(file);
      await s.load();
      await s.write([{ op: 'me', user: 'u-ana' }]);
      for (const conv of convs) {
        for (let from = 1; from <= perConv; from += 5000) {
          const events = [];
          for (let q = from; q < Math.min(from + 5000, perConv + 1); q++) events.push(ev(conv, q));
          await s.write([{ op: 'events', events }]);
        }
        await s.write([{ op: 'conv', rec: { conv, cursor: perConv, held: [], last: ev(conv, perConv), readState: null, unread: 0 } }]);
      }
      await s.close();
    } else {
      const state = { outbox: [], events: {}, cursors: {}, failed: [] };
      for (const conv of convs) {
        const byseq = (state.events[conv] = {});
        for (let q = 1; q <= perConv; q++) byseq[q] = ev(conv, q);
        state.cursors[conv] = perConv;
      }
      await new sdk.FileStorage(file).save(state);
    }
  }

  const out = { sdk: isNew ? 'new (SQLite)' : 'old (JSON file)' };
  if (kase === 'receive-empty' || kase === 'receive-held') {
    if (kase === 'receive-held') await seed(['c-held'], HELD);
    const c = await open();
    let n = 0;
    let done;
    const all = new Promise((r) => (done = r));
    c.on('event', () => { if (++n === 1000) done(); });
    const h0 = heap();
    await c.connect();
    const t0 = process.cpuUsage();
    const w0 = performance.now();
    await all;
    out.ms = Math.round(performance.now() - w0);
    out.cpuMs = cpu(t0);
    out.heapGrowthMb = mb(heap() - h0);
    await c.close();
  } else if (kase === 'sends' || kase === 'platform-sends') {
    await seed(['c-held'], HELD);
    const real = kase.startsWith('platform') ? await platformDevice() : null;
    const c = await open(real ? { url: real.ws, token: real.token } : {});
    await c.connect();
    const conv = real ? real.conv : 'c-send';
    const t0 = process.cpuUsage();
    const w0 = performance.now();
    for (let i = 0; i < 200; i++) await c.send(conv, `send ${i}`);
    out.msPerSend = Math.round((performance.now() - w0) / 200 * 10) / 10;
    out.cpuMs = cpu(t0);
    await c.close();
  } else if (kase === 'queued' || kase === 'platform-queued') {
    await seed(['c-held'], HELD);
    const real = kase.startsWith('platform') ? await platformDevice() : null;
    const c = await open(real ? { url: real.ws, token: real.token } : {});
    const conv = real ? real.conv : 'c-send';
    let peak = 0;
    const sample = setInterval(() => { peak = Math.max(peak, process.memoryUsage().heapUsed); }, 20);
    const t0 = process.cpuUsage();
    const w0 = performance.now();
    await c.connect();
    await Promise.all(Array.from({ length: 1400 }, (_, i) => c.send(conv, `queued ${i}`)));
    out.ms = Math.round(performance.now() - w0);
    out.cpuMs = cpu(t0);
    clearInterval(sample);
    out.peakHeapMb = mb(peak);
    await c.close();
  } else if (kase === 'big-seed') {
    const convs = Number(opt('convs', 1000));
    const per = Math.round(Number(opt('events', 1_000_000)) / convs);
    const w0 = performance.now();
    await seed(Array.from({ length: convs }, (_, i) => `c-${String(i).padStart(4, '0')}`), per);
    out.seedMs = Math.round(performance.now() - w0);
  } else if (kase === 'big') {
    // The first store a process opens pays a fixed warm-up (SQLite's WebAssembly functions are compiled
    // on their first call): measured apart, on an empty store, so that openMs is what the size costs.
    let w0 = performance.now();
    const warm = await sdk.openNodeClient({ url, token: 't', file: path.join(dir, isNew ? 'warm.db' : 'warm.json') });
    out.firstOpenEmptyMs = Math.round(performance.now() - w0);
    if (isNew) await warm.listConversations();
    await warm.close();
    const h0 = heap();
    w0 = performance.now();
    const c = await open();
    out.openMs = Math.round(performance.now() - w0);
    out.heapMb = mb(heap());
    out.heapGrowthMb = mb(heap() - h0);
    const rss = process.memoryUsage();
    out.rssMb = mb(rss.rss);
    out.externalMb = mb(rss.external);   // the WebAssembly memory of SQLite is counted here
    w0 = performance.now();
    let list;
    if (isNew) list = await c.listConversations();
    else {   // no list API: what an app had to do, the last event and a count per conversation
      list = Object.keys(await (async () => { const s = await new sdk.FileStorage(file).load(); return s.cursors; })())
        .map((conv) => { const es = c.events(conv); return { conv, last: es.at(-1), n: es.length }; });
    }
    out.listMs = Math.round(performance.now() - w0);
    out.convs = list.length;
    w0 = performance.now();
    const page = isNew ? await c.page('c-0500', { before: 500, limit: 50 }) : c.events('c-0500').filter((e) => e.seq < 500).slice(-50);
    out.pageMs = Math.round((performance.now() - w0) * 10) / 10;
    out.paged = page.length;
    // A word no event holds: the search reads every stored event (old: no search API, a filter over every conversation).
    w0 = performance.now();
    const found = isNew ? await c.search('no event holds these words', { limit: 50 })
      : list.flatMap((x) => c.events(x.conv).filter((e) => e.body.toLowerCase().includes('no event holds these words'))).slice(0, 50);
    out.searchAllMs = Math.round(performance.now() - w0);
    out.found = found.length;
    await c.close();
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

/**
 * For the platform-* cases: a user with one device in a new direct conversation on the platform at
 * IM_URL (admin API at IM_ADMIN_URL, token IM_ADMIN_TOKEN), e.g. started by scripts/with-platform.sh.
 */
async function platformDevice() {
  const base = process.env.IM_URL.replace(/\/$/, '');
  const adminBase = process.env.IM_ADMIN_URL.replace(/\/$/, '');
  const admin = async (method, p, body) => {
    const r = await fetch(adminBase + p, { method, body: body ? JSON.stringify(body) : undefined,
      headers: { Authorization: `Bearer ${process.env.IM_ADMIN_TOKEN}`, 'Content-Type': 'application/json' } });
    const text = await r.text();
    if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${text}`);
    return JSON.parse(text);
  };
  const id = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
  const users = [`u-ana-${id}`, `u-bo-${id}`];
  let token;
  for (const u of users) {
    await admin('POST', '/admin/users', { user: u, name: u });
    const d = await admin('POST', '/admin/devices', { user: u, device: `d-${u}` });
    token ??= d.token;
  }
  const conv = `c-${id}`;
  await admin('POST', '/admin/conversations', { conv, kind: 'direct', members: users });
  return { ws: `${base.replace(/^http/, 'ws')}/ws`, token, conv };
}

// ------------------------------------------------------------------ the parent: the server and the cases

function server(kase) {
  return new Promise((resolve) => {
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' }, () => resolve({ wss, url: `ws://127.0.0.1:${wss.address().port}/ws` }));
    let seq = 0;
    wss.on('connection', (ws) => {
      ws.on('message', (data) => {
        const f = JSON.parse(String(data));
        const reply = (o) => ws.send(JSON.stringify(o));
        if (f.t === 'auth') reply({ t: 'authed', rid: f.rid, user: 'u-ana', device: 'd-ana', epoch: 1 });
        else if (f.t === 'sub') {
          const convs = kase.startsWith('receive') ? [{ conv: 'c-in', head: 0, delivered: 0 }] : [];
          reply({ t: 'subbed', rid: f.rid, convs });
          // One push per event, as the gateway sends them.
          if (kase.startsWith('receive')) for (let q = 1; q <= 1000; q++) reply({ t: 'event', ev: ev('c-in', q) });
        } else if (f.t === 'send') reply({ t: 'sent', rid: f.rid, conv: f.conv, seq: ++seq, mid: `m${seq}`, dup: false, epoch: 1 });
        else if (f.t === 'ack') reply({ t: 'acked', rid: f.rid, conv: f.conv, delivered: f.seq });
        else if (f.t === 'sync') reply({ t: 'synced', rid: f.rid, conv: f.conv, events: [], more: false, head: f.after });
      });
    });
  });
}

function runChild(kase, dir, url, heapMb) {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ['--expose-gc', `--max-old-space-size=${heapMb}`, fileURLToPath(import.meta.url), '--child', kase, dir, url ?? '', ...args],
      { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    const limitS = Number(opt('timeout', 300));
    let timedOut = false;
    const timer = setTimeout(() => { timedOut = true; p.kill('SIGKILL'); }, limitS * 1000);
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    p.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (timedOut) return resolve({ failed: `not done within ${limitS} s (killed; --timeout)` });
      const line = out.trim().split('\n').filter((l) => l.startsWith('{')).at(-1);
      if (code === 0 && line) resolve(JSON.parse(line));
      else resolve({ failed: /heap out of memory/.test(err) ? `out of memory (heap limit ${heapMb} MB)` : `exit ${code ?? signal}: ${err.trim().split('\n').slice(-3).join(' | ')}` });
    });
  });
}

if (args[0] === '--child') {
  await child(args[1], args[2], args[3]);
} else {
  const only = opt('only', 'receive-empty,receive-held,sends,queued,big').split(',');
  const heapMb = Number(opt('heap', 4096));
  console.log(`SDK ${SDK}; node ${process.version}; child heap limit ${heapMb} MB`);
  for (const kase of only) {
    const dir = mkdtempSync(path.join(tmpdir(), 'im-store-bench-'));
    try {
      if (kase === 'big') {
        const seeded = await runChild('big-seed', dir, null, heapMb);
        console.log('big-seed', JSON.stringify(seeded));
        if (seeded.failed) continue;
      }
      if (kase.startsWith('platform')) {   // against a real platform: the client's own pushes come back and are stored too
        if (!process.env.IM_URL) throw new Error(`${kase}: set IM_URL, IM_ADMIN_URL and IM_ADMIN_TOKEN (scripts/with-platform.sh does)`);
        console.log(kase, JSON.stringify(await runChild(kase, dir, null, heapMb)));
        continue;
      }
      const { wss, url } = await server(kase);
      console.log(kase, JSON.stringify(await runChild(kase, dir, url, heapMb)));
      wss.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}
