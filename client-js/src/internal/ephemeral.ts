import { ImError, Limits, type Receipt } from '../protocol.js';
import type { Core } from './core.js';

/**
 * What is asked or told without touching the store (docs/protocol.md, "Typing" and "Receipts"): `typing`, written
 * one-way at most once per {@link Limits.TYPING_EVERY_MS} per conversation, and `receipts`, a plain request.
 */
export class Ephemeral {
  /** When a `typing` of each conversation was last written (Date.now()). */
  private readonly typedAt = new Map<string, number>();

  constructor(private readonly core: Core) {}

  typing(conv: string): boolean {
    const { core } = this;
    const now = Date.now();
    const last = this.typedAt.get(conv);
    if (last !== undefined && now - last < Limits.TYPING_EVERY_MS) return false;
    if (core.stopped || core.connState !== 'online') return false;
    if (!core.requests.write({ t: 'typing', rid: core.requests.nextRid(), conv })) return false;
    this.typedAt.set(conv, now);
    return true;
  }

  async receipts(conv: string, seqs: readonly number[]): Promise<Receipt[]> {
    if (seqs.length < 1 || seqs.length > Limits.RECEIPTS_MAX_SEQS || new Set(seqs).size !== seqs.length
      || !seqs.every((s) => Number.isSafeInteger(s) && s >= 1)) {
      throw new RangeError(`seqs: must be 1 … ${Limits.RECEIPTS_MAX_SEQS} distinct seqs (integers from 1), got ${JSON.stringify(seqs)}`);
    }
    const { core } = this;
    const ws = core.ws;
    if (!ws || core.stopped || core.connState !== 'online') throw new ImError('CLOSED', 'not connected');
    const f = await core.requests.send(ws, { t: 'receipts', rid: core.requests.nextRid(), conv, seqs: [...seqs] });
    if (f.t !== 'receipts' || f.receipts.length !== seqs.length || f.receipts.some((r, i) => r.seq !== seqs[i])) throw new ImError('INTERNAL', `a ${f.t} that does not match answered receipts`);
    return f.receipts.map(({ seq, members, read, devices, delivered }) => ({ seq, members, read, devices, delivered }));
  }
}
