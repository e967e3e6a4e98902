// The types the client's public face and its internal parts share (options, callbacks, states).
// Here, not in client.ts, so that internal/ never imports the class it is the machinery of.
import type { ConvState, Event, ImError, ServerFrame } from './protocol.js';
import type { OutboxEntry, Storage } from './storage.js';

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
   * Durable state: `SqliteStorage` (Node), `IndexedDbStorage` (browser) or `MemoryStorage`; or a function that
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

/** The user's read state of `conv` as the server gave it (`markRead`): `unread` counts the messages up to `head`. */
export interface ConvReadState { conv: string; read: number; unread: number; head: number }

/** A committed send, edit or recall: its own seq; `target`, for an edit or recall, the seq of the message it changed. */
export interface SentResult { conv: string; cmid: string; seq: number; mid: string; dup: boolean; target?: number }
/** Who the server says this token is (from `authed`): the user, the device and its install epoch. */
export interface Identity { user: string; device: string; epoch: number }
/** How a stored event arrived: a live push, or a sync page (catch-up, gap, hint). */
export type EventSource = 'push' | 'sync';
/**
 * `connecting` (socket opening, authenticating), `online` (connected: authenticated and subscribing),
 * `offline` (disconnected: lost, then reconnecting unless `disconnect()` asked for it), `closed` (by
 * `close()`), `failed` (a fatal error stopped the client); `idle` before the first `connect()`.
 */
export type ConnectionState = 'idle' | 'connecting' | 'online' | 'offline' | 'closed' | 'failed';
/**
 * Why the state changed: `lost` (the socket closed; `code` and the server's `message` if any),
 * `replaced` (closed 4009: a newer connection of this device took over, so the client does not
 * reconnect on its own; `connect()` takes the device back), `disconnect` (the app asked), `close`,
 * `fatal` (with the `error`).
 */
export interface StateDetail {
  reason?: 'lost' | 'replaced' | 'disconnect' | 'close' | 'fatal';
  code?: number;
  message?: string;
  error?: ImError;
}
/**
 * After each `subbed` answer (`reconnect` false for this client's first), once every conversation behind
 * its head has been synced or given up: `recovered` is true when the device holds every event up to the
 * heads `subbed` reported, with its local history kept; `failed` lists conversations whose sync gave up
 * (connection lost again, a terminal code, the INTERNAL cap: synced again at the next reconnect, hint or
 * push), `reset` those whose local copy was not the server's history and was dropped.
 */
export interface Recovery { reconnect: boolean; recovered: boolean; synced: string[]; failed: string[]; reset: string[] }

/** Typed callbacks (`client.on(name, fn)`). */
export interface ClientEvents {
  /**
   * A new event was stored durably (in (conv, seq) order per conversation as they arrive), as stored (a message with
   * its latest text, or recalled), and how it came. Edits and recalls are events too (kinds `edit`, `recall`).
   */
  event: (e: Event, source: EventSource) => void;
  /**
   * Message `seq` of `conv` now reads `body`, the text of edit `bySeq` (the edit with the highest seq held; an older
   * edit arriving late changes nothing and is not told). Told once durable, after that edit's `event`.
   */
  edited: (conv: string, seq: number, body: string, bySeq: number) => void;
  /**
   * Message `seq` of `conv` was recalled: its text and its edits' are gone from memory and from the store (a later
   * copy of it is stored without its text). Told once durable, after the recall's `event`.
   */
  recalled: (conv: string, seq: number) => void;
  /**
   * `user` (another member) is typing in `conv`: show it for `Limits.TYPING_SHOW_MS` (6 s) unless another `typing`
   * or a message of that user comes first. Ephemeral: nothing is stored.
   */
  typing: (conv: string, user: string) => void;
  /** An outbox entry is durable (before its first attempt). */
  queued: (entry: OutboxEntry) => void;
  /** An outbox entry was committed by the server (also for entries restored from storage). */
  sent: (r: SentResult) => void;
  /** An outbox entry was dropped (a terminal code, or too many INTERNAL answers) and kept in `failed()`. */
  sendFailed: (entry: OutboxEntry, error: ImError) => void;
  /**
   * The unread count of `conv` or the user's read cursor there changed (a read state from `subbed`, a `readack`
   * or an `unread` push, or a message of another user stored above the state's head); told once the record is
   * durable, with the values then.
   */
  unread: (conv: string, read: number, unread: number) => void;
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
  state: (s: ConnectionState, detail: StateDetail) => void;
  /** Whether the device caught up after a (re)subscribe: see {@link Recovery}. */
  recovery: (r: Recovery) => void;
  /** The connection was lost (close code `code`); reconnect attempt `attempt` starts in `delayMs`. */
  reconnecting: (attempt: number, delayMs: number, code: number) => void;
  /**
   * BAD_TOKEN or STALE_INSTALL (a new token, or registration, is needed), STORAGE, or TLS (the gateway's certificate
   * was not accepted; Node only, see the README): the client stops.
   */
  fatal: (error: ImError) => void;
}
