// Not a test (node --test runs every file under test/): a child process for the store's crash tests: writes batches to a SqliteStorage, reports each one on
// stdout once `write` resolved (durable), then kills itself with SIGKILL as a crash would, either after
// `batches` batches or in the middle of a transaction larger than SQLite's page cache.
import { SqliteStorage } from '../node.js';
import { msg } from '../test/fake-server.js';

const [file, batches, mode] = [process.argv[2], Number(process.argv[3]), process.argv[4]];
const s = new SqliteStorage(file);
await s.load();
for (let b = 1; b <= batches; b++) {
  await s.write([{ op: 'events', events: [msg('c-crash', b, `batch ${b}`)] },
    { op: 'conv', rec: { conv: 'c-crash', cursor: b, held: [], last: msg('c-crash', b), readState: null, unread: b } }]);
  process.stdout.write(`durable ${b}\n`);
}
if (mode === 'mid-transaction') {
  // Never committed: a big batch whose pages reach the WAL before the process dies.
  const big = Array.from({ length: 20_000 }, (_, i) => msg('c-big', i + 1, 'x'.repeat(200)));
  const db = (s as unknown as { db: { exec(sql: string): void; run(sql: string, v: unknown[]): void } }).db;
  db.exec('PRAGMA cache_size=10; BEGIN');
  for (const e of big) db.run('INSERT INTO events(conv, seq, kind, mid, sender, body, at) VALUES (?, ?, ?, ?, ?, ?, ?)', [e.conv, e.seq, e.kind, e.mid, e.sender, e.body, e.at]);
}
process.kill(process.pid, 'SIGKILL');
