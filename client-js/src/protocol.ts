/** Wire frames, limits and error codes of docs/protocol.md (and docs/asyncapi.yaml). */

export const Limits = {
  MAX_FRAME_BYTES: 65_536,
  MAX_BODY_BYTES: 16_384,
  MAX_SEQ: Number.MAX_SAFE_INTEGER,
  SYNC_DEFAULT_LIMIT: 100,
  SYNC_MAX_LIMIT: 500,
  SUB_DEFAULT_LIMIT: 500,
  SUB_MAX_LIMIT: 1000,
  CATCHUP_DEFAULT_LIMIT: 500,
  CATCHUP_MAX_LIMIT: 1000,
  /** Seqs one `receipts` request may ask about. */
  RECEIPTS_MAX_SEQS: 100,
  /** The SDK writes at most one `typing` per conversation in this window (the gateway's default throttle). */
  TYPING_EVERY_MS: 2000,
  /** How long to show "… is typing" after a `typing` push, unless a message of that user arrives first. */
  TYPING_SHOW_MS: 6000,
} as const;

export type ErrorCode =
  | 'BAD_JSON' | 'UNKNOWN_TYPE' | 'MISSING_FIELD' | 'BAD_FIELD' | 'BODY_TOO_LARGE' | 'FRAME_TOO_LARGE'
  | 'BAD_UTF8' | 'BINARY_UNSUPPORTED' | 'NOT_AUTHENTICATED' | 'ALREADY_AUTHENTICATED' | 'BAD_TOKEN'
  | 'STALE_INSTALL' | 'UNKNOWN_CONV' | 'NOT_MEMBER' | 'CMID_CONFLICT' | 'CURSOR_AHEAD' | 'RATE_LIMITED'
  | 'UNAVAILABLE' | 'INTERNAL' | 'NOT_A_MESSAGE' | 'NOT_SENDER' | 'TOO_LATE' | 'RECALLED';

/** Codes after which the same request may succeed unchanged; INTERNAL only a bounded number of times. */
export const RETRIABLE: ReadonlySet<string> = new Set(['RATE_LIMITED', 'UNAVAILABLE', 'INTERNAL']);
/** Codes after which the server closes the socket; reconnecting with the same token is pointless. */
export const CLOSES: Readonly<Record<string, number>> = { BAD_TOKEN: 4001, STALE_INSTALL: 4003, REPLACED: 4009 };

export interface Event {
  conv: string;
  seq: number;
  kind: 'msg' | 'join' | 'leave' | 'edit' | 'recall';
  mid: string;
  sender: string;
  cmid?: string;
  body: string;
  at: number;
  /** A bulk join only: how many users it added at once (at least 2; `sender` is the first). The list is never sent. */
  count?: number;
  /** An edit or a recall only: the seq of the message it changes. */
  ref?: number;
  /**
   * A recalled message or edit: its body is `""` (the server's tombstone, and the local view once the recall is held).
   */
  recalled?: boolean;
  /** The local view of a message that was edited: the seq of the edit whose text `body` is (the highest held). */
  edited?: number;
}

/**
 * One conversation of a `subbed` page: its head (the head the user may see), this device's delivered cursor and
 * the user's read state at that head (`read`, `unread`; absent from a server that predates read state).
 */
export interface ConvState { conv: string; head: number; delivered: number; read?: number; unread?: number }

/**
 * The user's read state of a conversation (docs/protocol.md, "Read state and unread counts"): the read cursor
 * `read`, and `unread`, the messages of other users the user may see with `read < seq <= head`.
 */
export interface ReadState { read: number; unread: number; head: number }

/**
 * How far one of the user's own messages got (docs/protocol.md, "Receipts"), from the server's cursors when asked:
 * of the `members` other than the sender who may see `seq`, `read` have read it; of their `devices`, `delivered`
 * have stored it.
 */
export interface Receipt { seq: number; members: number; read: number; devices: number; delivered: number }

/** What a `caughtup` page holds of one conversation: every visible event with `after < seq <= upTo`. */
export interface CaughtUpRange { conv: string; after: number; upTo: number }

export type ServerFrame =
  | { t: 'authed'; rid: string; user: string; device: string; epoch: number }
  | { t: 'sent'; rid: string; conv: string; seq: number; mid: string; dup: boolean; epoch: number }
  | { t: 'acked'; rid: string; conv: string; delivered: number }
  | { t: 'readack'; rid: string; conv: string; read: number; unread: number; head: number }
  | { t: 'unread'; conv: string; read: number; unread: number; head: number }
  | { t: 'subbed'; rid: string; convs: ConvState[]; more?: boolean }
  | { t: 'caughtup'; rid: string; events: Event[]; convs: CaughtUpRange[]; more: boolean; after?: string }
  | { t: 'synced'; rid: string; conv: string; events: Event[]; more: boolean; head: number }
  | { t: 'event'; ev: Event }
  | { t: 'hint'; conv: string; head: number; why: string }
  | { t: 'receipts'; rid: string; conv: string; receipts: Receipt[] }
  | { t: 'typing'; conv: string; user: string }
  | { t: 'error'; rid?: string; code: ErrorCode; msg: string };

export type ClientFrame =
  | { t: 'auth'; rid: string; token: string }
  | { t: 'send'; rid: string; conv: string; cmid: string; body: string }
  | { t: 'edit'; rid: string; conv: string; cmid: string; seq: number; body: string }
  | { t: 'recall'; rid: string; conv: string; cmid: string; seq: number }
  | { t: 'ack'; rid: string; conv: string; seq: number }
  | { t: 'read'; rid: string; conv: string; seq: number }
  | { t: 'sub'; rid: string; after?: string; limit?: number }
  | { t: 'catchup'; rid: string; after?: string; limit?: number }
  | { t: 'sync'; rid: string; conv: string; after: number; limit?: number }
  | { t: 'receipts'; rid: string; conv: string; seqs: number[] }
  | { t: 'typing'; rid: string; conv: string };

/** An error frame's code and message; `retriable` per the protocol's table. */
export class ImError extends Error {
  /**
   * A server code, or the client's own: `TIMEOUT` (no reply), `CLOSED` (not connected), `STORAGE` (the local store
   * failed), `TLS` (the gateway's certificate was not accepted: not signed by a trusted CA, expired, or for another host).
   */
  constructor(readonly code: ErrorCode | 'TIMEOUT' | 'CLOSED' | 'STORAGE' | 'TLS', message: string) {
    super(`${code}: ${message}`);
    this.name = 'ImError';
  }

  get retriable(): boolean {
    return RETRIABLE.has(this.code) || this.code === 'TIMEOUT' || this.code === 'CLOSED';
  }
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Refuses locally what the server would refuse as terminal (empty, NUL, too large). */
export function checkBody(body: string): void {
  if (typeof body !== 'string' || body.length === 0) throw new ImError('BAD_FIELD', 'body: must be a non-empty string');
  if (body.includes('\u0000')) throw new ImError('BAD_FIELD', 'body: must not contain U+0000');
  if (LONE_SURROGATE.test(body)) throw new ImError('BAD_UTF8', 'body: not well-formed Unicode');
  if (new TextEncoder().encode(body).length > Limits.MAX_BODY_BYTES) {
    throw new ImError('BODY_TOO_LARGE', `body: over ${Limits.MAX_BODY_BYTES} UTF-8 bytes`);
  }
}

/**
 * Parses a server frame; returns null for a frame this client does not know (ignored, as the protocol says). An
 * `edit` or `recall` event whose `ref` is not a seq below its own is dropped (a pushed one: the frame is null). The
 * read-state frames are checked strictly: a `readack` or `unread` whose `conv` is not a string or whose `read`,
 * `unread` or `head` is not an integer 0 … MAX_SEQ is dropped (null), and so is a `subbed` entry's read state
 * (`read`, `unread`: both or neither) when it is not such a pair; so is a `typing` push without a string `conv` and
 * `user`, and a `receipts` reply whose entries are not all receipts (five integers 0 … MAX_SEQ). Unknown fields are
 * ignored.
 */
export function parseServerFrame(text: string): ServerFrame | null {
  let f: unknown;
  try {
    f = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof f !== 'object' || f === null) return null;
  const t = (f as { t?: unknown }).t;
  if (!KNOWN.has(t as string)) return null;
  const o = f as Record<string, unknown>;
  if (t === 'readack' || t === 'unread') {
    if (typeof o.conv !== 'string' || !isSeq(o.read) || !isSeq(o.unread) || !isSeq(o.head)) return null;
    if (t === 'readack' && typeof o.rid !== 'string') return null;
  } else if (t === 'typing') {
    if (typeof o.conv !== 'string' || typeof o.user !== 'string' || o.rid !== undefined) return null;
  } else if (t === 'receipts') {
    if (typeof o.rid !== 'string' || typeof o.conv !== 'string' || !Array.isArray(o.receipts) || !o.receipts.every(isReceipt)) return null;
  } else if (t === 'event') {
    if (!validChange(o.ev)) return null;
  } else if ((t === 'synced' || t === 'caughtup') && Array.isArray(o.events)) {
    o.events = (o.events as unknown[]).filter(validChange);   // an edit or recall without its ref changes nothing
  } else if (t === 'subbed' && Array.isArray(o.convs)) {
    for (const c of o.convs as Array<Record<string, unknown>>) {
      if (typeof c !== 'object' || c === null || (c.read === undefined && c.unread === undefined)) continue;
      if (!isSeq(c.read) || !isSeq(c.unread)) {   // not a read state: the entry is kept without one
        delete c.read;
        delete c.unread;
      }
    }
  }
  return f as ServerFrame;
}

/** An event that is not an edit or recall, or one whose `ref` is a seq below its own. */
function validChange(e: unknown): boolean {
  if (typeof e !== 'object' || e === null) return false;
  const ev = e as Record<string, unknown>;
  if (ev.kind !== 'edit' && ev.kind !== 'recall') return true;
  return isSeq(ev.ref) && isSeq(ev.seq) && ev.ref < ev.seq;
}

const KNOWN = new Set(['authed', 'sent', 'acked', 'readack', 'unread', 'subbed', 'synced', 'caughtup', 'event', 'hint', 'receipts',
  'typing', 'error']);

function isReceipt(r: unknown): r is Receipt {
  if (typeof r !== 'object' || r === null) return false;
  const o = r as Record<string, unknown>;
  return isSeq(o.seq) && isSeq(o.members) && isSeq(o.read) && isSeq(o.devices) && isSeq(o.delivered);
}

/** A JSON integer 0 … MAX_SEQ (a seq, a cursor, a count). */
function isSeq(x: unknown): x is number {
  return typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
}
