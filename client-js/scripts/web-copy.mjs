// The gateway's web client imports the SDK's browser build from its own resources
// (gateway/src/main/resources/web/generated-sdk/), committed, so that building the gateway needs no Node.
//   node scripts/web-copy.mjs          (npm run build:web) writes that copy from src/browser.ts and what it imports
//   node scripts/web-copy.mjs --check  (part of npm test) fails when the committed copy differs from a fresh build
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const target = path.resolve(root, '../gateway/src/main/resources/web/generated-sdk');
const BANNER = '// Generated from client-js/src by `cd client-js && npm run build:web`; do not edit (npm test checks it).\n';
const tsc = path.join(root, 'node_modules/typescript/bin/tsc');

/** Compiles the browser entry into `dir` and returns its files, name -> content with the banner. */
function build(dir) {
  execFileSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.web.json'), '--outDir', dir], { stdio: 'inherit' });
  const files = new Map();
  for (const f of list(dir)) files.set(f, BANNER + readFileSync(path.join(dir, f), 'utf8'));
  return files;
}

/** The files under `dir` (the SDK's internals are in a subfolder), as sorted '/'-separated relative paths. */
function list(dir, sub = '') {
  const out = [];
  for (const d of readdirSync(path.join(dir, sub), { withFileTypes: true })) {
    const rel = sub ? `${sub}/${d.name}` : d.name;
    if (d.isDirectory()) out.push(...list(dir, rel));
    else out.push(rel);
  }
  return out.sort();
}

function read(dir) {
  const files = new Map();
  let names = [];
  try {
    names = list(dir);
  } catch (e) {
    if (e.code !== 'ENOENT') throw e;
  }
  for (const f of names) files.set(f, readFileSync(path.join(dir, f), 'utf8'));
  return files;
}

const tmp = mkdtempSync(path.join(tmpdir(), 'im-web-sdk-'));
try {
  const fresh = build(tmp);
  if (process.argv.includes('--check')) {
    const committed = read(target);
    const differ = [...new Set([...fresh.keys(), ...committed.keys()])].filter((f) => fresh.get(f) !== committed.get(f));
    if (differ.length > 0) {
      console.error(`The web client's SDK copy (${path.relative(path.resolve(root, '..'), target)}) differs from a fresh build`
        + ` in: ${differ.join(', ')}.\nRefresh it with: cd client-js && npm run build:web   (then commit it)`);
      process.exit(1);
    }
    console.log(`web SDK copy up to date (${fresh.size} files)`);
  } else {
    rmSync(target, { recursive: true, force: true });
    mkdirSync(target, { recursive: true });
    for (const [f, text] of fresh) {
      mkdirSync(path.dirname(path.join(target, f)), { recursive: true });
      writeFileSync(path.join(target, f), text);
    }
    console.log(`wrote ${fresh.size} files to ${target}`);
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
