import { CLOSES, ImError, parseServerFrame } from '../protocol.js';
import type { ConvState } from '../protocol.js';
import type { ConnectionState, Identity, SocketLike, StateDetail } from '../types.js';
import type { Acks } from './acks.js';
import type { Core } from './core.js';
import type { Reads } from './reads.js';
import type { ReceivePath } from './receive-path.js';
import type { SendPath } from './send-path.js';

/**
 * The connection: opens the socket, authenticates (picking the store at the first `authed` if asked to),
 * resends the outbox, subscribes; dispatches server frames; reconnects a lost connection with backoff
 * and jitter; stops for good on BAD_TOKEN, STALE_INSTALL, STORAGE or TLS (a certificate it does not accept).
 */
export class Connection {
  private offlineWanted = false;   // disconnect(): no reconnect until connect()
  private who: Identity | null = null;
  private reconnectAttempt = 0;
  private reconnectTimer: ReturnType<typeof setTimeout> | null = null;
  private subInternal = 0;
  private subscribedBefore = false;
  private closed = false;   // close() released the store: this client is done
  private firstOnline: { promise: Promise<void>; resolve: () => void; reject: (e: unknown) => void } | null = null;

  constructor(
    private readonly core: Core,
    private readonly sendPath: SendPath,
    private readonly receive: ReceivePath,
    private readonly acks: Acks,
    private readonly reads: Reads,
  ) {
    core.store.onBroken = (e) => this.fail(e);
  }

  get identity(): Identity | null {
    return this.who ? { ...this.who } : null;
  }

  /**
   * Resolves once subscribed. Calls while connecting share one promise; an abort of `signal` before it
   * settles stops connecting (as `disconnect()`) and rejects it with the signal's reason.
   */
  connect(signal?: AbortSignal): Promise<void> {
    if (this.core.connState === 'online') return Promise.resolve();
    if (this.closed) return Promise.reject(new ImError('CLOSED', 'the client was closed (its store released): open a new one'));
    signal?.throwIfAborted();
    this.core.stopped = false;
    this.offlineWanted = false;
    if (!this.firstOnline) {
      let resolve!: () => void;
      let reject!: (e: unknown) => void;
      const promise = new Promise<void>((ok, fail) => { resolve = ok; reject = fail; });
      this.firstOnline = { promise, resolve, reject };
    }
    const mine = this.firstOnline;
    if (signal) {
      const onAbort = () => {
        if (this.firstOnline !== mine) return;   // settled meanwhile
        this.firstOnline = null;
        this.disconnect();
        mine.reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      void mine.promise.then(() => signal.removeEventListener('abort', onAbort), () => signal.removeEventListener('abort', onAbort));
    }
    if (!this.core.ws) this.openSocket();
    return mine.promise;
  }

  disconnect(): void {
    this.offlineWanted = true;
    if (this.reconnectTimer) {
      this.core.timers.cancel(this.reconnectTimer);
      this.reconnectTimer = null;
    }
    this.firstOnline?.reject(new ImError('CLOSED', 'disconnected'));
    this.firstOnline = null;
    const ws = this.core.ws;
    if (ws) {
      ws.close(1000);
      this.onClosed(ws, 1000, 'disconnect');   // now, not at the close event: pending requests settle at once
    } else if (!this.core.stopped) {
      this.setState('offline', { reason: 'disconnect' });
    }
  }

  async close(): Promise<void> {
    const { core } = this;
    this.closed = true;
    core.stopped = true;
    this.clearTimers();
    this.setState('closed', { reason: 'close' });
    core.ws?.close(1000);
    core.ws = null;
    this.firstOnline?.reject(new ImError('CLOSED', 'closed'));
    this.firstOnline = null;
    this.reads.stop(new ImError('CLOSED', 'closed'));
    core.listeners.end();
    await core.store.close();
  }

  /** Stops at once as a killed process would, without flushing anything not yet saved. */
  crash(): void {
    const { core } = this;
    core.stopped = true;
    this.clearTimers();
    const ws = core.ws;
    core.ws = null;
    if (ws) {
      ws.onclose = ws.onmessage = ws.onerror = null;
      ws.close();
    }
    core.requests.drop();
    core.connState = 'closed';
    core.store.abandon();
  }

  private setState(s: ConnectionState, detail: StateDetail = {}): void {
    if (this.core.connState === s) return;
    this.core.connState = s;
    this.core.listeners.emit('state', s, detail);
  }

  private openSocket(): void {
    this.setState('connecting');
    const ws = new this.core.o.webSocket(this.core.o.url);
    this.core.ws = ws;
    ws.onopen = () => void this.handshake(ws);
    ws.onmessage = (m) => this.onText(ws, String(m.data));
    let rejected: ImError | null = null;
    ws.onerror = (ev) => { rejected = certificateRejected(ev, this.core.o.url); };   // a close follows
    ws.onclose = (ev) => {
      // Retrying cannot help until the trust or the gateway's certificate changes.
      if (rejected && ws === this.core.ws) this.fail(rejected);
      else this.onClosed(ws, ev.code, 'lost', (ev as { reason?: string }).reason);
    };
  }

  private async handshake(ws: SocketLike): Promise<void> {
    const { core } = this;
    try {
      const authed = await core.requests.send(ws, { t: 'auth', rid: core.requests.nextRid(), token: core.o.token });
      if (authed.t === 'authed') this.who = { user: authed.user, device: authed.device, epoch: authed.epoch };
      if (!core.store.ready) await core.store.bind(this.who!);
      await core.store.identify(this.who!.user);
      if (ws !== core.ws) return;   // lost meanwhile: the reconnect starts over
      this.reconnectAttempt = 0;
      this.setState('online');
      this.sendPath.resendAll();
      this.reads.resume();
      await this.subscribe(ws);
      this.firstOnline?.resolve();   // subscribed: pushes from here on reach this client
      this.firstOnline = null;
    } catch (e) {
      const err = e as ImError;
      if (err.code === 'BAD_TOKEN' || err.code === 'STALE_INSTALL' || err.code === 'STORAGE') this.fail(err);
      else if (ws === core.ws) ws.close();   // reconnect
    }
  }

  /** Pages `sub` until `more` is false (a failed page is retried, not the pass), then hands every page to the receive path. */
  private async subscribe(ws: SocketLike): Promise<void> {
    const { core } = this;
    const convs: ConvState[] = [];
    let after: string | undefined;
    while (ws === core.ws && !core.stopped) {
      try {
        const f = await core.requests.send(ws, { t: 'sub', rid: core.requests.nextRid(), ...(after === undefined ? {} : { after }) });
        this.subInternal = 0;
        if (f.t !== 'subbed') return;
        convs.push(...f.convs);
        if (f.more && f.convs.length > 0) {
          after = f.convs[f.convs.length - 1]!.conv;
          continue;
        }
        this.receive.onSubbed(convs, this.subscribedBefore);
        this.subscribedBefore = true;
        return;
      } catch (e) {
        const err = e as ImError;
        if (!err.retriable || err.code === 'CLOSED') {
          if (err.code !== 'CLOSED') core.listeners.emit('subscribeFailed', err);
          return;
        }
        if (err.code === 'INTERNAL' && ++this.subInternal >= core.o.maxInternalErrors) {
          this.subInternal = 0;
          core.listeners.emit('subscribeFailed', err);
          return;
        }
        await core.timers.delay(core.backoff(this.subInternal));
      }
    }
  }

  private onText(ws: SocketLike, text: string): void {
    if (ws !== this.core.ws) return;
    const f = parseServerFrame(text);
    if (!f || this.core.o.dropIncoming?.(f)) return;
    if (this.core.requests.reply(f)) return;
    switch (f.t) {
      case 'event':
        void this.receive.onPush(f.ev);
        break;
      case 'hint':
        this.receive.onHint(f.conv, f.head, f.why);
        break;
      case 'unread':   // another device of the user moved the read cursor
        void this.receive.onReadState(f.conv, { read: f.read, unread: f.unread, head: f.head });
        break;
      case 'typing':   // another member is typing
        this.core.listeners.emit('typing', f.conv, f.user);
        break;
      case 'error':   // unsolicited (STALE_INSTALL before the close)
        if (f.code === 'STALE_INSTALL' || f.code === 'BAD_TOKEN') this.fail(new ImError(f.code, f.msg));
        break;
      default:
        break;
    }
  }

  private fail(err: ImError): void {
    this.core.stopped = true;
    this.clearTimers();
    const ws = this.core.ws;
    if (ws) {   // the server closes after a refused token; after STORAGE the socket is still open
      ws.close(1000);
      this.onClosed(ws, 1000);
    }
    this.setState('failed', { reason: 'fatal', error: err });
    this.reads.stop(err);
    this.firstOnline?.reject(err);
    this.firstOnline = null;
    this.core.listeners.emit('fatal', err);
  }

  private onClosed(ws: SocketLike, code: number, reason: StateDetail['reason'] = 'lost', serverReason?: string): void {
    const { core } = this;
    if (ws !== core.ws) return;
    core.ws = null;
    core.requests.lost();
    this.sendPath.lost();
    this.receive.lost();
    if (core.stopped) return;
    if (code === CLOSES.BAD_TOKEN || code === CLOSES.STALE_INSTALL) {
      this.fail(new ImError(code === CLOSES.BAD_TOKEN ? 'BAD_TOKEN' : 'STALE_INSTALL', `closed with ${code}`));
      return;
    }
    if (code === CLOSES.REPLACED) {   // a newer connection of this device took over: reconnecting would take it back
      this.setState('offline', { reason: 'replaced', code, ...(serverReason ? { message: serverReason } : {}) });
      return;
    }
    this.setState('offline', { reason, code, ...(serverReason ? { message: serverReason } : {}) });
    if (!core.o.autoReconnect || this.offlineWanted) return;
    const delayMs = core.backoff(this.reconnectAttempt++);
    this.reconnectTimer = core.timers.after(delayMs, () => {
      this.reconnectTimer = null;
      if (!core.stopped && !core.ws) this.openSocket();
    });
    core.listeners.emit('reconnecting', this.reconnectAttempt, delayMs, code);
  }

  private clearTimers(): void {
    this.core.timers.clear();
    this.acks.clearTimers();
    this.core.requests.clearTimers();
  }
}

/**
 * The `TLS` error when a socket failed because its TLS handshake rejected the gateway's certificate. Node's
 * `ws` passes the TLS error (OpenSSL's verify codes, and Node's own for a wrong host name); a browser's
 * error event says nothing, so there a rejected certificate looks like any lost connection.
 */
function certificateRejected(ev: unknown, url: string): ImError | null {
  const error = (ev as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  const code = typeof error?.code === 'string' ? error.code : '';
  if (!/CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|HOSTNAME_MISMATCH/.test(code)) return null;
  return new ImError('TLS', `cannot connect to ${url}: the gateway's certificate is not accepted (${code}: ${String(error?.message)}); `
    + 'it must be signed by a trusted CA (the ca/caFile option, else the platform\'s), be valid now and name the host of the url');
}
