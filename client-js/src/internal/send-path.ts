import { ImError, checkBody, type ClientFrame } from '../protocol.js';
import type { FailedEntry, OutboxEntry, StoreOp } from '../storage.js';
import type { SentResult } from '../types.js';
import type { Core } from './core.js';

interface Waiter { resolve: (r: SentResult) => void; reject: (e: unknown) => void }

/**
 * The durable outbox (messages, edits and recalls): an entry is saved before its first attempt and resent with the same cmid (after a
 * lost reply, a retriable code or a reconnect) until `sent` or a terminal code; INTERNAL at most
 * `maxInternalErrors` times. Entries refused for good move to `failed`.
 */
export class SendPath {
  private readonly waiters = new Map<string, Waiter>();
  private readonly inflight = new Set<string>();

  constructor(private readonly core: Core) {}

  async send(conv: string, body: string, signal?: AbortSignal): Promise<SentResult> {
    checkBody(body);
    return this.enqueue({ conv, body }, signal);
  }

  /** An edit of message `seq`: through the outbox as a send, answered by `sent` with the edit's own seq. */
  async edit(conv: string, seq: number, body: string, signal?: AbortSignal): Promise<SentResult> {
    checkBody(body);
    checkTarget(seq);
    return this.enqueue({ conv, body, target: seq }, signal);
  }

  /** A recall of message `seq`: through the outbox as a send, answered by `sent` with the recall's own seq. */
  async recall(conv: string, seq: number, signal?: AbortSignal): Promise<SentResult> {
    checkTarget(seq);
    return this.enqueue({ conv, body: '', target: seq, recall: true }, signal);
  }

  private async enqueue(request: Pick<OutboxEntry, 'conv' | 'body' | 'target' | 'recall'>, signal?: AbortSignal): Promise<SentResult> {
    signal?.throwIfAborted();
    const { store } = this.core;
    if (!store.ready) throw new ImError('CLOSED', 'no store yet: it is chosen at the first authed');
    const entry: OutboxEntry = { cmid: randomId(), ...request, internalErrors: 0 };
    store.outboxList.push(entry);
    await store.write([{ op: 'outboxPut', entry: { ...entry } }]);
    this.core.listeners.emit('queued', { ...entry });
    const result = new Promise<SentResult>((resolve, reject) => this.waiters.set(entry.cmid, { resolve, reject }));
    if (signal) {
      const onAbort = () => void this.cancel(entry, signal.reason);
      if (signal.aborted) onAbort();
      else {
        signal.addEventListener('abort', onAbort, { once: true });
        void result.then(() => signal.removeEventListener('abort', onAbort), () => signal.removeEventListener('abort', onAbort));
      }
    }
    if (this.core.connState === 'online') this.attempt(entry);
    return result;
  }

  /**
   * A cancelled send: the entry leaves the outbox (durably) and is never resent; the promise rejects with
   * the signal's reason. An attempt already on the wire may still commit (the server cannot be asked to
   * forget it): the message then arrives as an event like any other.
   */
  private async cancel(entry: OutboxEntry, reason: unknown): Promise<void> {
    const { store } = this.core;
    const i = store.outboxList.indexOf(entry);
    if (i < 0) return;   // settled already
    store.outboxList.splice(i, 1);
    const w = this.waiters.get(entry.cmid);
    this.waiters.delete(entry.cmid);
    try {
      await store.write([{ op: 'outboxDel', cmid: entry.cmid }]);
    } finally {
      w?.reject(reason);
    }
  }

  /** Online again: every pending entry goes out (an entry already in flight is left to its attempt). */
  resendAll(): void {
    for (const e of this.core.store.outboxList) this.attempt(e);
  }

  /** The connection is gone: nothing is in flight any more. */
  lost(): void {
    this.inflight.clear();
  }

  private attempt(entry: OutboxEntry): void {
    const { core } = this;
    const ws = core.ws;
    if (!ws || this.inflight.has(entry.cmid)) return;
    this.inflight.add(entry.cmid);
    const frame = frameOf(entry, core.requests.nextRid());
    core.requests.send(ws, frame).then(
      (f) => {
        this.inflight.delete(entry.cmid);
        if (f.t !== 'sent') return;
        const target = entry.target === undefined ? {} : { target: entry.target };
        void this.settle(entry, null, { conv: f.conv, cmid: entry.cmid, seq: f.seq, mid: f.mid, dup: f.dup, ...target });
      },
      async (err: ImError) => {
        this.inflight.delete(entry.cmid);
        if (err.code === 'CLOSED') return;   // resent after the reconnect
        if (!core.store.outboxList.includes(entry)) return;   // cancelled while in flight: never written back
        if (!err.retriable) {
          await this.settle(entry, err, null);
          return;
        }
        if (err.code === 'INTERNAL') {
          entry.internalErrors++;
          if (entry.internalErrors >= core.o.maxInternalErrors) {
            await this.settle(entry, err, null);
            return;
          }
          await core.store.write([{ op: 'outboxPut', entry: { ...entry } }]);
        }
        // TIMEOUT (a lost reply), UNAVAILABLE, RATE_LIMITED, INTERNAL below the cap: same cmid, later.
        await core.timers.delay(err.code === 'TIMEOUT' ? 0 : core.backoff(entry.internalErrors));
        if (!core.stopped && core.store.outboxList.includes(entry)) this.attempt(entry);
      },
    );
  }

  private async settle(entry: OutboxEntry, err: ImError | null, ok: SentResult | null): Promise<void> {
    const { store } = this.core;
    const i = store.outboxList.indexOf(entry);
    if (i < 0) return;
    store.outboxList.splice(i, 1);
    const ops: StoreOp[] = [{ op: 'outboxDel', cmid: entry.cmid }];
    if (err) {
      // An edit refused because its message was recalled keeps no text of it (a recall leaves none behind).
      const f: FailedEntry = { ...entry, ...(err.code === 'RECALLED' ? { body: '' } : {}), code: err.code, msg: err.message };
      store.failedList.push(f);
      ops.push({ op: 'failedPut', entry: { ...f } });
    }
    await store.write(ops);
    const w = this.waiters.get(entry.cmid);
    this.waiters.delete(entry.cmid);
    if (ok) {
      this.core.listeners.emit('sent', ok);
      w?.resolve(ok);
    } else {
      this.core.listeners.emit('sendFailed', { ...entry }, err!);
      w?.reject(err!);
    }
  }
}

/** The request an outbox entry is: a `send`, an `edit` or a `recall` (with its target's seq). */
function frameOf(entry: OutboxEntry, rid: string): ClientFrame {
  const base = { rid, conv: entry.conv, cmid: entry.cmid };
  if (entry.target === undefined) return { t: 'send', ...base, body: entry.body };
  return entry.recall ? { t: 'recall', ...base, seq: entry.target } : { t: 'edit', ...base, seq: entry.target, body: entry.body };
}

/** The seq of the message an edit or recall changes: a positive safe integer. */
function checkTarget(seq: number): void {
  if (!Number.isSafeInteger(seq) || seq < 1) throw new ImError('BAD_FIELD', `seq: must be a positive integer, got ${seq}`);
}

/** 128 random bits as hex; getRandomValues works on plain http too (randomUUID needs a secure context). */
function randomId(): string {
  const c = (globalThis as { crypto?: { getRandomValues?: (a: Uint8Array) => Uint8Array } }).crypto;
  const b = new Uint8Array(16);
  if (c?.getRandomValues) c.getRandomValues(b);
  else for (let i = 0; i < b.length; i++) b[i] = Math.floor(Math.random() * 256);
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}
