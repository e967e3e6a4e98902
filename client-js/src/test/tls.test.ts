import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ImClient, ImError, MemoryStorage, nodeWebSocket, openNodeClient, type Event } from '../node.js';
import { FakeServer, msg } from './fake-server.js';

// Test material (src/test/tls/README.md): a test CA, and certificates it signed for 127.0.0.1 and 127.0.0.2.
const TLS_DIR = fileURLToPath(new URL('../../src/test/tls/', import.meta.url));
const CA_FILE = path.join(TLS_DIR, 'test-ca.pem');
const pem = (name: string) => readFileSync(path.join(TLS_DIR, name), 'utf8');

async function tlsServer(name = 'test-server'): Promise<FakeServer> {
  const server = await FakeServer.startTls(pem(`${name}.pem`), pem(`${name}-key.pem`));
  server.handler = (f, reply) => {
    if (f.t === 'sub') reply({ t: 'subbed', rid: f.rid, convs: [] });
    if (f.t === 'send') reply({ t: 'sent', rid: f.rid, conv: f.conv, seq: 7, mid: 'm7', dup: false, epoch: 1 });
  };
  return server;
}

const stateFile = async () => path.join(await mkdtemp(path.join(tmpdir(), 'imjs-tls-')), 'ana.db');

test('over wss trusting the CA of a PEM file, the client authenticates, sends and receives', async () => {
  const server = await tlsServer();
  const c = await openNodeClient({ url: server.url, token: 't', file: await stateFile(), caFile: CA_FILE });
  await c.connect({ signal: AbortSignal.timeout(10_000) });
  assert.equal((await c.send('c-ab', 'over wss')).seq, 7);
  const got = new Promise<Event>((resolve) => c.on('event', (e) => resolve(e)));
  server.push({ t: 'event', ev: msg('c-ab', 1, 'pushed over wss') });
  assert.equal((await got).body, 'pushed over wss');
  await c.close(); await server.close();
});

test('the CA may be given as PEM text to nodeWebSocket, for a client with a storage of the app', async () => {
  const server = await tlsServer();
  const c = await ImClient.open({ url: server.url, token: 't', storage: new MemoryStorage(), webSocket: nodeWebSocket({ ca: pem('test-ca.pem') }) });
  await c.connect({ signal: AbortSignal.timeout(10_000) });
  assert.equal(c.identity?.user, 'u-ana');
  await c.close(); await server.close();
});

test('without the CA, connect rejects at once with TLS and the client does not retry', async () => {
  const server = await tlsServer();
  const c = await ImClient.open({ url: server.url, token: 't', storage: new MemoryStorage(), webSocket: nodeWebSocket(),
    reconnectMinMs: 5, reconnectMaxMs: 20 });
  const fatal: ImError[] = [];
  c.on('fatal', (e) => fatal.push(e));
  const err = await c.connect({ signal: AbortSignal.timeout(10_000) }).then(() => null, (e: unknown) => e);
  assert.ok(err instanceof ImError && err.code === 'TLS', String(err));
  assert.match(err.message, /certificate is not accepted \((UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)/);
  assert.equal(c.connectionState, 'failed');
  assert.deepEqual(fatal.map((e) => e.code), ['TLS']);
  await new Promise((r) => setTimeout(r, 200));   // 10 backoffs' worth: a retry would have connected again
  assert.equal(server.tcpConnections, 1, 'one attempt only');
  assert.equal(server.frames.length, 0, 'the token was never sent');
  await c.close(); await server.close();
});

test('a certificate for another host is rejected although its CA is trusted', async () => {
  const server = await tlsServer('test-other-host');   // names 127.0.0.2; the url says 127.0.0.1
  const c = await openNodeClient({ url: server.url, token: 't', file: await stateFile(), caFile: CA_FILE });
  const err = await c.connect({ signal: AbortSignal.timeout(10_000) }).then(() => null, (e: unknown) => e);
  assert.ok(err instanceof ImError && err.code === 'TLS', String(err));
  assert.match(err.message, /ERR_TLS_CERT_ALTNAME_INVALID/);
  await c.close(); await server.close();
});

test('a CA file or text that cannot be used is refused when the client is opened, naming it', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'imjs-ca-'));
  const empty = path.join(dir, 'empty.pem');
  const garbled = path.join(dir, 'garbled.pem');
  writeFileSync(empty, '');
  writeFileSync(garbled, '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n');
  const url = 'wss://127.0.0.1:9/ws';
  const file = await stateFile();
  await assert.rejects(openNodeClient({ url, token: 't', file, caFile: path.join(dir, 'missing.pem') }), /^Error: caFile .*missing\.pem: cannot read it/);
  await assert.rejects(openNodeClient({ url, token: 't', file, caFile: empty }), /^Error: caFile .*empty\.pem: holds no certificate/);
  await assert.rejects(openNodeClient({ url, token: 't', file, caFile: garbled }), /^Error: caFile .*garbled\.pem: a certificate does not parse/);
  assert.throws(() => nodeWebSocket({ ca: 'not pem' }), /^Error: ca: holds no certificate/);
  assert.throws(() => nodeWebSocket({ ca: pem('test-ca.pem'), caFile: CA_FILE }), /give one of them, not both/);
  await assert.rejects(openNodeClient({ url: 'ws://127.0.0.1:9/ws', token: 't', file, caFile: CA_FILE }), /only for a wss:\/\/ url/);
});
