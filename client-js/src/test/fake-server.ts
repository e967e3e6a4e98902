import { WebSocketServer, type WebSocket } from 'ws';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';

/** A scripted WebSocket peer for unit tests: records client frames, answers by a handler. */
export class FakeServer {
  readonly frames: Array<Record<string, unknown>> = [];
  private readonly wss: WebSocketServer;
  /** The HTTPS server under a `wss://` fake (null for `ws://`), and the TCP connections it accepted. */
  private https: Server | null = null;
  tcpConnections = 0;
  sockets: WebSocket[] = [];
  handler: (f: Record<string, unknown>, reply: (o: object) => void) => void = () => {};
  private waiters: Array<() => void> = [];
  /** False: `catchup` is answered `UNKNOWN_TYPE`, as by a server that predates it (the SDK then syncs each conversation). */
  catchup = false;

  private constructor(wss: WebSocketServer) {
    this.wss = wss;
    wss.on('connection', (ws) => {
      this.sockets.push(ws);
      ws.on('message', (data) => {
        const f = JSON.parse(String(data)) as Record<string, unknown>;
        this.frames.push(f);
        const reply = (o: object) => ws.send(JSON.stringify(o));
        if (f.t === 'auth' && f.token === 'bad') {
          reply({ t: 'error', rid: f.rid, code: 'BAD_TOKEN', msg: 'bad' });
          ws.close(4001, 'BAD_TOKEN');
        } else if (f.t === 'auth') reply({ t: 'authed', rid: f.rid, user: 'u-ana', device: 'd-ana', epoch: 1 });
        else if (f.t === 'catchup' && !this.catchup) reply({ t: 'error', rid: f.rid, code: 'UNKNOWN_TYPE', msg: 'a server without catchup' });
        else this.handler(f, reply);
        for (const w of this.waiters.splice(0)) w();
      });
    });
  }

  static start(): Promise<FakeServer> {
    return new Promise((resolve) => {
      const wss: WebSocketServer = new WebSocketServer({ port: 0, host: "127.0.0.1" }, (): void => resolve(new FakeServer(wss)));
    });
  }

  /** A fake serving `wss://` with the PEM certificate chain `cert` and its key `key`. */
  static startTls(cert: string, key: string): Promise<FakeServer> {
    return new Promise((resolve) => {
      const https = createServer({ cert, key });
      const wss = new WebSocketServer({ server: https });
      const fake = new FakeServer(wss);
      fake.https = https;
      https.on('connection', () => fake.tcpConnections++);
      https.listen(0, '127.0.0.1', () => resolve(fake));
    });
  }

  get url(): string {
    return `${this.https ? 'wss' : 'ws'}://127.0.0.1:${(this.wss.address() as AddressInfo).port}/ws`;
  }

  push(o: object): void {
    for (const s of this.sockets) s.send(JSON.stringify(o));
  }

  of(t: string): Array<Record<string, unknown>> {
    return this.frames.filter((f) => f.t === t);
  }

  /** Waits (up to 5 s) until `cond` holds, re-checked after every received frame and every 20 ms. */
  async until(cond: () => boolean, what: string, ms = 5000): Promise<void> {
    const end = Date.now() + ms;
    while (!cond()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}; frames: ${JSON.stringify(this.frames)}`);
      await new Promise<void>((r) => { this.waiters.push(r); setTimeout(r, 20); });
    }
  }

  close(): Promise<void> {
    for (const s of this.sockets) s.terminate();
    return new Promise((r) => this.wss.close(() => (this.https ? this.https.close(() => r()) : r())));
  }
}

export const msg = (conv: string, seq: number, body = `m${seq}`) =>
  ({ conv, seq, kind: 'msg' as const, mid: `mid-${seq}`, sender: 'u-bo', cmid: `k${seq}`, body, at: 1 });

type FakeEvent = ReturnType<typeof msg> | (Omit<ReturnType<typeof msg>, 'kind'> & { kind: 'msg' | 'join' | 'leave' });

/**
 * The server's side of read state (docs/protocol.md, "Read state and unread counts") for a fake: the events of
 * each conversation and the user's read cursor; `state` is what `subbed`, `readack` and `unread` carry.
 */
export class FakeReads {
  private readonly events = new Map<string, FakeEvent[]>();
  private readonly cursors = new Map<string, number>();

  constructor(readonly user = 'u-ana') {}

  add(...evs: FakeEvent[]): void {
    for (const e of evs) {
      const list = this.events.get(e.conv) ?? [];
      list.push(e);
      this.events.set(e.conv, list);
    }
  }

  head(conv: string): number {
    return (this.events.get(conv) ?? []).reduce((m, e) => Math.max(m, e.seq), 0);
  }

  state(conv: string): { read: number; unread: number; head: number } {
    const read = this.cursors.get(conv) ?? 0;
    const unread = (this.events.get(conv) ?? []).filter((e) => e.kind === 'msg' && e.sender !== this.user && e.seq > read).length;
    return { read, unread, head: this.head(conv) };
  }

  /** A `subbed` entry of `conv` with this device's `delivered`. */
  entry(conv: string, delivered = 0): object {
    const s = this.state(conv);
    return { conv, head: s.head, delivered, read: s.read, unread: s.unread };
  }

  /** Moves the read cursor up (never down, never above the head) as a `read` does; the state after it. */
  read(conv: string, seq: number): { read: number; unread: number; head: number } {
    this.cursors.set(conv, Math.max(this.cursors.get(conv) ?? 0, Math.min(seq, this.head(conv))));
    return this.state(conv);
  }

  /** The `readack` of a `read` frame. */
  readack(f: Record<string, unknown>): object {
    return { t: 'readack', rid: f.rid, conv: f.conv, ...this.read(f.conv as string, f.seq as number) };
  }
}
