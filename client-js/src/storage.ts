import type { Event } from './protocol.js';

/** One message written before its first attempt and kept until `sent` or a terminal error. */
export interface OutboxEntry {
  cmid: string;
  conv: string;
  body: string;
  /** INTERNAL answers so far; the entry is dropped at maxInternalErrors. */
  internalErrors: number;
}

/** An outbox entry the server refused for good (a terminal code, or too many INTERNAL answers); never resent. */
export interface FailedEntry extends OutboxEntry {
  code: string;
  msg: string;
}

/**
 * Everything a device keeps: outbox, events by (conv, seq), contiguous cursor per conversation, and
 * the sends refused for good (kept until dismissed, so a UI can still show them after a restart;
 * absent in states saved by older versions).
 */
export interface State {
  outbox: OutboxEntry[];
  events: Record<string, Record<number, Event>>;
  cursors: Record<string, number>;
  failed?: FailedEntry[];
}

export function emptyState(): State {
  return { outbox: [], events: {}, cursors: {}, failed: [] };
}

/**
 * Where a client keeps its state. `save` resolves only once the state is durable (the file store
 * fsyncs, the IndexedDB store waits for a strict-durability commit): the client writes the outbox
 * before a first send and acks only after a save resolved.
 */
export interface Storage {
  load(): Promise<State | null>;
  save(state: State): Promise<void>;
}

/** A store in memory: nothing survives the process. For tests and throw-away clients. */
export class MemoryStorage implements Storage {
  private json: string | null = null;

  async load(): Promise<State | null> {
    return this.json === null ? null : (JSON.parse(this.json) as State);
  }

  async save(state: State): Promise<void> {
    this.json = JSON.stringify(state);
  }
}
