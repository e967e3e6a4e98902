import { ImError, type ClientFrame, type ServerFrame } from '../protocol.js';
import type { SocketLike } from '../types.js';

interface Pending { resolve: (f: ServerFrame) => void; reject: (e: ImError) => void; timer: ReturnType<typeof setTimeout> }

/** Requests awaiting their reply, matched by rid, each failed with TIMEOUT after `timeoutMs`. */
export class PendingRequests {
  private rid = 0;
  private readonly pending = new Map<string, Pending>();

  constructor(private readonly timeoutMs: number, private readonly current: () => SocketLike | null) {}

  nextRid(): string {
    return `r${++this.rid}`;
  }

  /** Sends a request and resolves with its reply; rejects with the error frame's code, TIMEOUT or CLOSED. */
  send(ws: SocketLike, frame: ClientFrame): Promise<ServerFrame> {
    return new Promise((resolve, reject) => {
      if (ws !== this.current() || ws.readyState !== 1) {
        reject(new ImError('CLOSED', 'not connected'));
        return;
      }
      const timer = setTimeout(() => {
        this.pending.delete(frame.rid);
        reject(new ImError('TIMEOUT', `no reply to ${frame.t} within ${this.timeoutMs} ms`));
      }, this.timeoutMs);
      this.pending.set(frame.rid, { resolve, reject, timer });
      ws.send(JSON.stringify(frame));
    });
  }

  /**
   * Writes a frame that is answered only when refused (`typing`): no pending entry, no timeout, and the error that
   * may answer it is ignored as a reply nobody waits for. False when not connected (nothing was written).
   */
  write(frame: ClientFrame): boolean {
    const ws = this.current();
    if (!ws || ws.readyState !== 1) return false;
    ws.send(JSON.stringify(frame));
    return true;
  }

  /** How many requests await their reply. */
  get size(): number {
    return this.pending.size;
  }

  /** Settles the request a frame answers; false for a frame without a rid (a push, a hint). */
  reply(f: ServerFrame): boolean {
    if (!('rid' in f) || f.rid === undefined) return false;
    const p = this.pending.get(f.rid);
    if (p) {
      this.pending.delete(f.rid);
      clearTimeout(p.timer);
      if (f.t === 'error') p.reject(new ImError(f.code, f.msg));
      else p.resolve(f);
    }
    return true;
  }

  /** The connection is gone: every pending request fails with CLOSED. */
  lost(): void {
    for (const [rid, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new ImError('CLOSED', 'connection lost'));
      this.pending.delete(rid);
    }
  }

  clearTimers(): void {
    for (const p of this.pending.values()) clearTimeout(p.timer);
  }

  /** Forgets every request unsettled, as a killed process would. */
  drop(): void {
    this.pending.clear();
  }
}
