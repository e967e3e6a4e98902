import { CLOSES, ImError, checkBody, parseServerFrame, type ClientFrame, type ConvState, type ErrorCode, type Event, type ServerFrame } from './protocol.js';
import { emptyState, type FailedEntry, type OutboxEntry, type State, type Storage } from './storage.js';

/** The part of the WebSocket API the client uses: the browser's, which the `ws` package also implements. */
export interface SocketLike {
  readonly readyState: number;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  send(data: string): void;
  close(code?: number): void;
}
export type WebSocketCtor = new (url: string) => SocketLike;

export interface ClientOptions {
  /** `ws://host:port/ws`. */
  url: string;
  /** The device token (`POST /admin/devices`). */
  token: string;
  /**
   * Durable state: `FileStorage` (Node), `IndexedDbStorage` (browser) or `MemoryStorage`; or a function that
   * picks the store once the server said whose token this is (at the first `authed`), e.g. one IndexedDB
   * database per device install. With a function nothing is loaded before the first `authed`, `send` rejects
   * until then, and a store that cannot be opened or read stops the client (`fatal` with code `STORAGE`).
   */
  storage: Storage | ((who: Identity) => Storage | Promise<Storage>);
  /** WebSocket constructor; default `globalThis.WebSocket`. */
  webSocket?: WebSocketCtor;
  /** A request without a reply within this is resent (a send with the same cmid). Default 5000 ms. */
  requestTimeoutMs?: number;
  /** Reconnect and retry backoff bounds (exponential with jitter). Default 100 ms … 5000 ms. */
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
  /** Acks of one conversation within this window are coalesced into one. Default 10 ms. */
  ackDelayMs?: number;
  /** `limit` of each sync page (1 … 500). Default 100. */
  syncLimit?: number;
  /** `INTERNAL` answers a request may get before it is given up and reported. Default 5. */
  maxInternalErrors?: number;
  /** Reconnect after a lost connection. Default true. */
  autoReconnect?: boolean;
  /** Test hook: return true to drop a server frame as if the network lost it. */
  dropIncoming?: (frame: ServerFrame) => boolean;
}

export interface SentResult { conv: string; cmid: string; seq: number; mid: string; dup: boolean }
/** Who the server says this token is (from `authed`): the user, the device and its install epoch. */
export interface Identity { user: string; device: string; epoch: number }
/** How a stored event arrived: a live push, or a sync page (catch-up, gap, hint). */
export type EventSource = 'push' | 'sync';
export type ConnectionState = 'idle' | 'connecting' | 'online' | 'offline' | 'closed' | 'failed';

/** Typed callbacks (`client.on(name, fn)`). */
export interface ClientEvents {
  /** A new event was stored durably (in (conv, seq) order per conversation as they arrive), and how it came. */
  event: (e: Event, source: EventSource) => void;
  /** An outbox entry is durable (before its first attempt). */
  queued: (entry: OutboxEntry) => void;
  /** An outbox entry was committed by the server (also for entries restored from storage). */
  sent: (r: SentResult) => void;
  /** An outbox entry was dropped (a terminal code, or too many INTERNAL answers) and kept in `failed()`. */
  sendFailed: (entry: OutboxEntry, error: ImError) => void;
  /** The server holds this device's cursor of `conv` at `delivered` (the answer to an ack). */
  acked: (conv: string, delivered: number) => void;
  /** An ack was given up after too many INTERNAL answers; it is sent again with the next advance. */
  ackFailed: (conv: string, seq: number, error: ImError) => void;
  subscribeFailed: (error: ImError) => void;
  /** The `subbed` answer: this user's conversations with their heads and this device's delivered cursors. */
  subscribed: (convs: ConvState[]) => void;
  /**
   * The server's head of `conv` is below the local cursor, so the local copy is not this server's history
   * (e.g. a platform reset): the conversation's events and cursor were dropped and it is synced afresh.
   */
  reset: (conv: string, head: number) => void;
  hint: (conv: string, head: number, why: string) => void;
  state: (s: ConnectionState) => void;
  /** The connection was lost (close code `code`); reconnect attempt `attempt` starts in `delayMs`. */
  reconnecting: (attempt: number, delayMs: number, code: number) => void;
  /** BAD_TOKEN or STALE_INSTALL (a new token, or registration, is needed), or STORAGE: the client stops. */
  fatal: (error: ImError) => void;
}

interface Pending { resolve: (f: ServerFrame) => void; reject: (e: ImError) => void; timer: ReturnType<typeof setTimeout> }
interface Waiter { resolve: (r: SentResult) => void; reject: (e: ImError) => void }

/**
 * A device's connection to the platform with the guarantees of docs/protocol.md, as the Java SDK:
 * `send` writes a durable outbox entry first and resends it with the same cmid until `sent` or a
 * terminal error; events are kept by (conv, seq) with a contiguous cursor; a gap or a hint syncs;
 * acks go out only after the store is durable, coalesced; reconnect with backoff and jitter;
 * INTERNAL retried at most `maxInternalErrors` times.
 */
export class ImClient {
  private readonly o: Required<Omit<ClientOptions, 'dropIncoming' | 'webSocket' | 'storage'>> & Pick<ClientOptions, 'dropIncoming'> & { webSocket: WebSocketCtor };
  private readonly listeners = new Map<keyof ClientEvents, Set<(...a: never[]) => void>>();
  private ws: SocketLike | null = null;
  private rid = 0;
  private connState: ConnectionState = 'idle';
  private stopped = false;
  private offlineWanted = false;   // disconnect(): no reconnect until connect()
  private who: Identity | null = null;
  private binding: Promise<void> | null = null;
  private subbed: ConvState[] = [];
  private reconnectAttempt = 0;
  private reconnectTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly pending = new Map<string, Pending>();
  private readonly waiters = new Map<string, Waiter>();
  private readonly inflight = new Set<string>();
  private readonly syncing = new Map<string, boolean>();   // conv -> another round wanted
  private readonly serverDelivered = new Map<string, number>();
  /** Per conversation, the cursor of the last state known durable: the only value ever acked. */
  private readonly durable = new Map<string, number>();
  private readonly ackWanted = new Map<string, number>();
  private readonly ackOwed = new Map<string, number>();     // refused CURSOR_AHEAD: resend once a head covers it
  private readonly ackTimers = new Map<string, ReturnType<typeof setTimeout>>();
  private readonly ackInternal = new Map<string, number>();
  private subInternal = 0;
  private saveChain: Promise<void> = Promise.resolve();
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();
  private streams: Array<(e: Event) => void> = [];
  private firstOnline: { resolve: () => void; reject: (e: ImError) => void } | null = null;

  private constructor(
    options: ClientOptions,
    private state: State,
    private storage: Storage | null,
    private readonly pickStorage: ((who: Identity) => Storage | Promise<Storage>) | null,
  ) {
    const ctor = options.webSocket ?? (globalThis as unknown as { WebSocket?: WebSocketCtor }).WebSocket;
    if (!ctor) throw new Error('webSocket: no WebSocket constructor (use the node entry point or pass one)');
    this.o = {
      requestTimeoutMs: 5000, reconnectMinMs: 100, reconnectMaxMs: 5000, ackDelayMs: 10, syncLimit: 100,
      maxInternalErrors: 5, autoReconnect: true, ...options, webSocket: ctor,
    } as typeof this.o;
    if (this.o.syncLimit < 1 || this.o.syncLimit > 500) throw new Error(`syncLimit: must be 1 … 500, got ${this.o.syncLimit}`);
    if (this.o.maxInternalErrors < 1) throw new Error(`maxInternalErrors: must be at least 1, got ${this.o.maxInternalErrors}`);
    this.adopt(state);
  }

  /**
   * Loads the device's state from `options.storage` (the outbox is resent on connect); when `storage` is a
   * function, at the first `authed` instead.
   */
  static async open(options: ClientOptions): Promise<ImClient> {
    const s = options.storage;
    if (typeof s === 'function') return new ImClient(options, emptyState(), null, s);
    return new ImClient(options, (await s.load()) ?? emptyState(), s, null);
  }

  private adopt(state: State): void {
    state.failed ??= [];
    this.state = state;
    this.durable.clear();
    for (const [conv, c] of Object.entries(state.cursors)) this.durable.set(conv, c);
  }

  on<K extends keyof ClientEvents>(name: K, fn: ClientEvents[K]): () => void {
    let set = this.listeners.get(name);
    if (!set) this.listeners.set(name, (set = new Set()));
    set.add(fn as never);
    return () => set!.delete(fn as never);
  }

  private emit<K extends keyof ClientEvents>(name: K, ...args: Parameters<ClientEvents[K]>): void {
    for (const fn of this.listeners.get(name) ?? []) (fn as (...a: unknown[]) => void)(...args);
  }

  /** Every newly stored event, as an async iterator (`for await (const e of client.stream())`). */
  stream(): AsyncIterableIterator<Event> {
    const queue: Event[] = [];
    let wake: (() => void) | null = null;
    const push = (e: Event) => { queue.push(e); wake?.(); };
    this.streams.push(push);
    const self = this;
    return {
      [Symbol.asyncIterator]() { return this; },
      async next(): Promise<IteratorResult<Event>> {
        while (queue.length === 0) {
          if (self.stopped) return { value: undefined, done: true };
          await new Promise<void>((r) => (wake = r));
          wake = null;
        }
        return { value: queue.shift()!, done: false };
      },
      async return(): Promise<IteratorResult<Event>> {
        self.streams = self.streams.filter((p) => p !== push);
        return { value: undefined, done: true };
      },
    };
  }

  get connectionState(): ConnectionState {
    return this.connState;
  }

  /** Who the server said this token is, at the last `authed`; null before. */
  get identity(): Identity | null {
    return this.who ? { ...this.who } : null;
  }

  /** The conversations of the last `subbed` answer (head and this device's delivered cursor as then). */
  conversations(): ConvState[] {
    return this.subbed.map((c) => ({ ...c }));
  }

  /** The highest seq up to which every visible event of `conv` is stored. */
  cursor(conv: string): number {
    return this.state.cursors[conv] ?? 0;
  }

  /** The stored events of `conv` in seq order. */
  events(conv: string): Event[] {
    return Object.values(this.state.events[conv] ?? {}).sort((a, b) => a.seq - b.seq);
  }

  /** Entries not yet committed. */
  outbox(): OutboxEntry[] {
    return this.state.outbox.map((e) => ({ ...e }));
  }

  /** Sends the server refused for good (oldest first), kept durably until dismissed; never resent. */
  failed(): FailedEntry[] {
    return (this.state.failed ?? []).map((e) => ({ ...e }));
  }

  /** Forgets a failed send (see `failed()`); resolves once that is durable. */
  async dismissFailed(cmid: string): Promise<void> {
    const before = this.state.failed!.length;
    this.state.failed = this.state.failed!.filter((e) => e.cmid !== cmid);
    if (this.state.failed.length !== before) await this.persist();
  }

  /** Connects, authenticates and subscribes; resolves once subscribed (later losses reconnect by themselves). */
  connect(): Promise<void> {
    if (this.connState === 'online') return Promise.resolve();
    this.stopped = false;
    this.offlineWanted = false;
    const p = new Promise<void>((resolve, reject) => (this.firstOnline = { resolve, reject }));
    if (!this.ws) this.openSocket();
    return p;
  }

  /**
   * Sends a message: resolves with the committed seq once the server replied `sent` (possibly after
   * reconnects), rejects with an {@link ImError} on a terminal code or after too many INTERNAL answers.
   * The outbox entry is durable before the first attempt.
   */
  async send(conv: string, body: string): Promise<SentResult> {
    checkBody(body);
    if (!this.storage) throw new ImError('CLOSED', 'no store yet: it is chosen at the first authed');
    const entry: OutboxEntry = { cmid: randomId(), conv, body, internalErrors: 0 };
    this.state.outbox.push(entry);
    await this.persist();
    this.emit('queued', { ...entry });
    const result = new Promise<SentResult>((resolve, reject) => this.waiters.set(entry.cmid, { resolve, reject }));
    if (this.connState === 'online') this.attemptSend(entry);
    return result;
  }

  /** Syncs `conv` from the cursor now (as on a gap or hint). */
  syncNow(conv: string): Promise<void> {
    return this.syncConv(conv);
  }

  /**
   * Closes the socket and stays offline (state `offline`, no reconnect) until `connect()`; the store, the
   * outbox and `send` keep working (sends go out after the next connect).
   */
  disconnect(): void {
    this.offlineWanted = true;
    if (this.reconnectTimer) {
      clearTimeout(this.reconnectTimer);
      this.timers.delete(this.reconnectTimer);
      this.reconnectTimer = null;
    }
    this.firstOnline?.reject(new ImError('CLOSED', 'disconnected'));
    this.firstOnline = null;
    const ws = this.ws;
    if (ws) {
      ws.close(1000);
      this.onClosed(ws, 1000);   // now, not at the close event: pending requests settle at once
    } else if (!this.stopped) {
      this.setState('offline');
    }
  }

  /** Closes the connection, stops reconnecting and waits for pending writes to the store. */
  async close(): Promise<void> {
    this.stopped = true;
    this.clearTimers();
    this.setState('closed');
    this.ws?.close(1000);
    this.ws = null;
    for (const w of this.streams) w(undefined as never);
    await this.saveChain;
  }

  /** Test hook: stops at once as a killed process would, without flushing anything not yet saved. */
  _crash(): void {
    this.stopped = true;
    this.clearTimers();
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      ws.onclose = ws.onmessage = ws.onerror = null;
      ws.close();
    }
    this.pending.clear();
    this.connState = 'closed';
  }

  // --- connection -------------------------------------------------------------------------------

  private setState(s: ConnectionState): void {
    if (this.connState === s) return;
    this.connState = s;
    this.emit('state', s);
  }

  private openSocket(): void {
    this.setState('connecting');
    const ws = new this.o.webSocket(this.o.url);
    this.ws = ws;
    ws.onopen = () => void this.handshake(ws);
    ws.onmessage = (m) => this.onText(ws, String(m.data));
    ws.onerror = () => { /* a close follows */ };
    ws.onclose = (ev) => this.onClosed(ws, ev.code);
  }

  private async handshake(ws: SocketLike): Promise<void> {
    try {
      const authed = await this.request(ws, { t: 'auth', rid: this.nextRid(), token: this.o.token });
      if (authed.t === 'authed') this.who = { user: authed.user, device: authed.device, epoch: authed.epoch };
      if (!this.storage) await this.bindStorage();
      if (ws !== this.ws) return;   // lost meanwhile: the reconnect starts over
      this.reconnectAttempt = 0;
      this.setState('online');
      for (const e of this.state.outbox) this.attemptSend(e);
      await this.subscribe(ws);
      this.firstOnline?.resolve();   // subscribed: pushes from here on reach this client
      this.firstOnline = null;
    } catch (e) {
      const err = e as ImError;
      if (err.code === 'BAD_TOKEN' || err.code === 'STALE_INSTALL' || err.code === 'STORAGE') this.fail(err);
      else if (ws === this.ws) ws.close();   // reconnect
    }
  }

  /** Opens the store `options.storage` picks for this identity and adopts its state (once). */
  private bindStorage(): Promise<void> {
    this.binding ??= this.openStorage().catch((e: unknown) => {
      this.binding = null;   // a later connect() tries again
      throw new ImError('STORAGE', `the local store could not be opened: ${e instanceof Error ? e.message : String(e)}`);
    });
    return this.binding;
  }

  private async openStorage(): Promise<void> {
    const storage = await this.pickStorage!(this.who!);
    this.adopt((await storage.load()) ?? emptyState());
    this.storage = storage;
  }

  private async subscribe(ws: SocketLike): Promise<void> {
    while (ws === this.ws && !this.stopped) {
      try {
        const f = await this.request(ws, { t: 'sub', rid: this.nextRid() });
        this.subInternal = 0;
        if (f.t === 'subbed') this.onSubbed(f.convs);
        return;
      } catch (e) {
        const err = e as ImError;
        if (!err.retriable || err.code === 'CLOSED') {
          if (err.code !== 'CLOSED') this.emit('subscribeFailed', err);
          return;
        }
        if (err.code === 'INTERNAL' && ++this.subInternal >= this.o.maxInternalErrors) {
          this.subInternal = 0;
          this.emit('subscribeFailed', err);
          return;
        }
        await this.delay(this.backoff(this.subInternal));
      }
    }
  }

  private fail(err: ImError): void {
    this.stopped = true;
    this.clearTimers();
    const ws = this.ws;
    if (ws) {   // the server closes after a refused token; after STORAGE the socket is still open
      ws.close(1000);
      this.onClosed(ws, 1000);
    }
    this.setState('failed');
    this.firstOnline?.reject(err);
    this.firstOnline = null;
    this.emit('fatal', err);
  }

  private onClosed(ws: SocketLike, code: number): void {
    if (ws !== this.ws) return;
    this.ws = null;
    for (const [rid, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new ImError('CLOSED', 'connection lost'));
      this.pending.delete(rid);
    }
    this.inflight.clear();
    this.syncing.clear();
    if (this.stopped) return;
    if (code === CLOSES.BAD_TOKEN || code === CLOSES.STALE_INSTALL) {
      this.fail(new ImError(code === CLOSES.BAD_TOKEN ? 'BAD_TOKEN' : 'STALE_INSTALL', `closed with ${code}`));
      return;
    }
    this.setState('offline');
    if (!this.o.autoReconnect || this.offlineWanted) return;
    const delayMs = this.backoff(this.reconnectAttempt++);
    const t = setTimeout(() => {
      this.timers.delete(t);
      this.reconnectTimer = null;
      if (!this.stopped && !this.ws) this.openSocket();
    }, delayMs);
    this.timers.add(t);
    this.reconnectTimer = t;
    this.emit('reconnecting', this.reconnectAttempt, delayMs, code);
  }

  /** Exponential backoff with jitter: a random delay in [d/2, d], d = min(max, min·2^attempt). */
  private backoff(attempt: number): number {
    const d = Math.min(this.o.reconnectMaxMs, this.o.reconnectMinMs * 2 ** Math.min(attempt, 20));
    return d / 2 + Math.random() * (d / 2);
  }

  private delay(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => { this.timers.delete(t); resolve(); }, ms);
      this.timers.add(t);
    });
  }

  private clearTimers(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const t of this.ackTimers.values()) clearTimeout(t);
    this.ackTimers.clear();
    for (const p of this.pending.values()) clearTimeout(p.timer);
  }

  private nextRid(): string {
    return `r${++this.rid}`;
  }

  /** Sends a request and resolves with its reply; rejects with the error frame's code, TIMEOUT or CLOSED. */
  private request(ws: SocketLike, frame: ClientFrame): Promise<ServerFrame> {
    return new Promise((resolve, reject) => {
      if (ws !== this.ws || ws.readyState !== 1) {
        reject(new ImError('CLOSED', 'not connected'));
        return;
      }
      const timer = setTimeout(() => {
        this.pending.delete(frame.rid);
        reject(new ImError('TIMEOUT', `no reply to ${frame.t} within ${this.o.requestTimeoutMs} ms`));
      }, this.o.requestTimeoutMs);
      this.pending.set(frame.rid, { resolve, reject, timer });
      ws.send(JSON.stringify(frame));
    });
  }

  private onText(ws: SocketLike, text: string): void {
    if (ws !== this.ws) return;
    const f = parseServerFrame(text);
    if (!f || this.o.dropIncoming?.(f)) return;
    if ('rid' in f && f.rid !== undefined) {
      const p = this.pending.get(f.rid);
      if (p) {
        this.pending.delete(f.rid);
        clearTimeout(p.timer);
        if (f.t === 'error') p.reject(new ImError(f.code, f.msg));
        else p.resolve(f);
      }
      return;
    }
    switch (f.t) {
      case 'event':
        void this.onPush(f.ev);
        break;
      case 'hint':
        this.emit('hint', f.conv, f.head, f.why);
        this.headReported(f.conv, f.head);
        if (f.head > this.cursor(f.conv)) void this.syncConv(f.conv);
        break;
      case 'error':   // unsolicited (STALE_INSTALL before the close)
        if (f.code === 'STALE_INSTALL' || f.code === 'BAD_TOKEN') this.fail(new ImError(f.code, f.msg));
        break;
      default:
        break;
    }
  }

  // --- outbox -----------------------------------------------------------------------------------

  private attemptSend(entry: OutboxEntry): void {
    const ws = this.ws;
    if (!ws || this.inflight.has(entry.cmid)) return;
    this.inflight.add(entry.cmid);
    const frame: ClientFrame = { t: 'send', rid: this.nextRid(), conv: entry.conv, cmid: entry.cmid, body: entry.body };
    this.request(ws, frame).then(
      (f) => {
        this.inflight.delete(entry.cmid);
        if (f.t !== 'sent') return;
        void this.settle(entry, null, { conv: f.conv, cmid: entry.cmid, seq: f.seq, mid: f.mid, dup: f.dup });
      },
      async (err: ImError) => {
        this.inflight.delete(entry.cmid);
        if (err.code === 'CLOSED') return;   // resent after the reconnect
        if (!err.retriable) {
          await this.settle(entry, err, null);
          return;
        }
        if (err.code === 'INTERNAL') {
          entry.internalErrors++;
          if (entry.internalErrors >= this.o.maxInternalErrors) {
            await this.settle(entry, err, null);
            return;
          }
          await this.persist();
        }
        // TIMEOUT (a lost reply), UNAVAILABLE, RATE_LIMITED, INTERNAL below the cap: same cmid, later.
        await this.delay(err.code === 'TIMEOUT' ? 0 : this.backoff(entry.internalErrors));
        if (!this.stopped && this.state.outbox.includes(entry)) this.attemptSend(entry);
      },
    );
  }

  private async settle(entry: OutboxEntry, err: ImError | null, ok: SentResult | null): Promise<void> {
    const i = this.state.outbox.indexOf(entry);
    if (i < 0) return;
    this.state.outbox.splice(i, 1);
    if (err) this.state.failed!.push({ ...entry, code: err.code, msg: err.message });
    await this.persist();
    const w = this.waiters.get(entry.cmid);
    this.waiters.delete(entry.cmid);
    if (ok) {
      this.emit('sent', ok);
      w?.resolve(ok);
    } else {
      this.emit('sendFailed', { ...entry }, err!);
      w?.reject(err!);
    }
  }

  // --- receiving --------------------------------------------------------------------------------

  private onSubbed(convs: ConvState[]): void {
    this.subbed = convs.map((c) => ({ ...c }));
    for (const c of convs) if (c.head < this.cursor(c.conv)) this.resetConv(c.conv, c.head);
    this.emit('subscribed', this.conversations());
    for (const c of convs) {
      this.serverDelivered.set(c.conv, c.delivered);
      this.headReported(c.conv, c.head);
      if (c.head > this.cursor(c.conv)) void this.syncConv(c.conv);
      const d = this.durable.get(c.conv) ?? 0;   // not cursor(): pushes may be stored but not durable yet
      if (d > c.delivered) this.wantAck(c.conv, d);
    }
  }

  /** Drops a conversation's local events and cursor: the server's head is below them (see the `reset` event). */
  private resetConv(conv: string, head: number): void {
    delete this.state.events[conv];
    delete this.state.cursors[conv];
    this.durable.delete(conv);
    this.ackWanted.delete(conv);
    this.ackOwed.delete(conv);
    this.persist().catch(() => undefined);   // a failed save is retried by the next one, which holds this too
    this.emit('reset', conv, head);
  }

  private async onPush(ev: Event): Promise<void> {
    const before = this.cursor(ev.conv);
    this.headReported(ev.conv, ev.seq);
    if (ev.seq <= before) return;   // a duplicate
    await this.store(ev.conv, [ev], null, 'push');
    if (ev.seq > before + 1 && this.cursor(ev.conv) < ev.seq) void this.syncConv(ev.conv);   // a gap
  }

  /** Syncs from the cursor, paging while `more`; one round at a time per conversation. */
  private async syncConv(conv: string): Promise<void> {
    if (this.syncing.has(conv)) {
      this.syncing.set(conv, true);
      return;
    }
    this.syncing.set(conv, false);
    let internal = 0;
    try {
      let after = this.cursor(conv);
      for (;;) {
        const ws = this.ws;
        if (!ws || this.stopped) return;
        let f: ServerFrame;
        try {
          f = await this.request(ws, { t: 'sync', rid: this.nextRid(), conv, after, limit: this.o.syncLimit });
        } catch (e) {
          const err = e as ImError;
          if (!err.retriable || err.code === 'CLOSED' || (err.code === 'INTERNAL' && ++internal >= this.o.maxInternalErrors)) return;
          await this.delay(this.backoff(internal));
          continue;
        }
        if (f.t !== 'synced') return;
        const last = f.events.reduce((m, e) => Math.max(m, e.seq), after);
        // more:false: every visible event up to head is in hand, so the cursor may pass invisible seqs.
        await this.store(conv, f.events, f.more ? null : f.head, 'sync');
        this.headReported(conv, f.head);
        if (!f.more) {
          if (this.syncing.get(conv)) {
            this.syncing.set(conv, false);
            after = this.cursor(conv);
            continue;
          }
          return;
        }
        after = last;
      }
    } finally {
      this.syncing.delete(conv);
    }
  }

  /** Stores new events, advances the contiguous cursor, waits for durability, then emits and acks. */
  private async store(conv: string, events: Event[], completeTo: number | null, source: EventSource): Promise<void> {
    const byseq = (this.state.events[conv] ??= {});
    const fresh: Event[] = [];
    for (const e of events) {
      if (e.seq > this.cursor(conv) && !byseq[e.seq]) {
        byseq[e.seq] = e;
        fresh.push(e);
      }
    }
    let c = this.cursor(conv);
    while (byseq[c + 1]) c++;
    if (completeTo !== null) c = Math.max(c, completeTo);
    const moved = c > this.cursor(conv);
    this.state.cursors[conv] = c;
    if (fresh.length === 0 && !moved) return;
    await this.persist();
    this.durable.set(conv, Math.max(c, this.durable.get(conv) ?? 0));
    fresh.sort((a, b) => a.seq - b.seq);
    for (const e of fresh) {
      this.emit('event', e, source);
      for (const s of this.streams) s(e);
    }
    if (c > (this.serverDelivered.get(conv) ?? -1)) this.wantAck(conv, c);   // c was durable before this line
  }

  // --- acks -------------------------------------------------------------------------------------

  /** Queues an ack of a durable cursor; acks of one conversation within ackDelayMs go out as one. */
  private wantAck(conv: string, seq: number): void {
    if (seq <= (this.ackWanted.get(conv) ?? 0) && this.ackTimers.has(conv)) return;
    this.ackWanted.set(conv, Math.max(seq, this.ackWanted.get(conv) ?? 0));
    if (this.ackTimers.has(conv)) return;
    const t = setTimeout(() => {
      this.ackTimers.delete(conv);
      void this.flushAck(conv);
    }, this.o.ackDelayMs);
    this.ackTimers.set(conv, t);
  }

  private async flushAck(conv: string): Promise<void> {
    const seq = this.ackWanted.get(conv);
    const ws = this.ws;
    if (seq === undefined || !ws || this.stopped) return;
    if (seq <= (this.serverDelivered.get(conv) ?? -1)) return;
    try {
      const f = await this.request(ws, { t: 'ack', rid: this.nextRid(), conv, seq });
      this.ackInternal.delete(conv);
      if (f.t === 'acked') {
        this.serverDelivered.set(conv, Math.max(f.delivered, this.serverDelivered.get(conv) ?? 0));
        this.emit('acked', conv, f.delivered);
      }
    } catch (e) {
      const err = e as ImError;
      if (err.code === 'CURSOR_AHEAD') {
        this.ackOwed.set(conv, seq);   // not taken: sent again once a head covers it
        void this.syncConv(conv);
        return;
      }
      if (err.code === 'CLOSED') return;   // subbed reports delivered again after the reconnect
      if (!err.retriable) return;
      const n = err.code === 'INTERNAL' ? (this.ackInternal.get(conv) ?? 0) + 1 : (this.ackInternal.get(conv) ?? 0);
      if (err.code === 'INTERNAL' && n >= this.o.maxInternalErrors) {
        this.ackInternal.delete(conv);
        this.emit('ackFailed', conv, seq, err);
        return;
      }
      this.ackInternal.set(conv, n);
      await this.delay(this.backoff(n));
      this.wantAck(conv, seq);
    }
  }

  private headReported(conv: string, head: number): void {
    const owed = this.ackOwed.get(conv);
    if (owed !== undefined && head >= owed) {
      this.ackOwed.delete(conv);
      this.wantAck(conv, Math.max(owed, this.durable.get(conv) ?? 0));
    }
  }

  // --- storage ----------------------------------------------------------------------------------

  /** Saves a snapshot of the state taken now; resolves once it (and every earlier one) is durable. */
  private persist(): Promise<void> {
    const snapshot = JSON.parse(JSON.stringify(this.state)) as State;
    const storage = this.storage!;
    const next = this.saveChain.then(() => storage.save(snapshot));
    this.saveChain = next.catch(() => undefined);
    return next;
  }
}

/** 128 random bits as hex; getRandomValues works on plain http too (randomUUID needs a secure context). */
function randomId(): string {
  const c = (globalThis as { crypto?: { getRandomValues?: (a: Uint8Array) => Uint8Array } }).crypto;
  const b = new Uint8Array(16);
  if (c?.getRandomValues) c.getRandomValues(b);
  else for (let i = 0; i < b.length; i++) b[i] = Math.floor(Math.random() * 256);
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

export type { ErrorCode };
