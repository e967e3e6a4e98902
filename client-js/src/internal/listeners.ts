import type { ClientEvents, EventSource } from '../types.js';
import type { Event } from '../protocol.js';

/** The client's typed callbacks (`on`) and its async iterators of new events (`stream`). */
export class Listeners {
  private readonly fns = new Map<keyof ClientEvents, Set<(...a: never[]) => void>>();
  /** Per open stream: hand it an event, or wake it to see that the client stopped. */
  private streams: Array<{ push: (e: Event) => void; wake: () => void }> = [];

  on<K extends keyof ClientEvents>(name: K, fn: ClientEvents[K]): () => void {
    let set = this.fns.get(name);
    if (!set) this.fns.set(name, (set = new Set()));
    set.add(fn as never);
    return () => set!.delete(fn as never);
  }

  emit<K extends keyof ClientEvents>(name: K, ...args: Parameters<ClientEvents[K]>): void {
    for (const fn of this.fns.get(name) ?? []) (fn as (...a: unknown[]) => void)(...args);
  }

  /** A new event is durable: the `event` callbacks, then every stream. */
  stored(e: Event, source: EventSource): void {
    this.emit('event', e, source);
    for (const s of this.streams) s.push(e);
  }

  /** Every newly stored event as an async iterator; it ends once `stopped()` holds and its queue is empty. */
  stream(stopped: () => boolean): AsyncIterableIterator<Event> {
    const queue: Event[] = [];
    let wake: (() => void) | null = null;
    const entry = { push: (e: Event) => { queue.push(e); wake?.(); }, wake: () => wake?.() };
    this.streams.push(entry);
    const self = this;
    return {
      [Symbol.asyncIterator]() { return this; },
      async next(): Promise<IteratorResult<Event>> {
        while (queue.length === 0) {
          if (stopped()) return { value: undefined, done: true };
          await new Promise<void>((r) => (wake = r));
          wake = null;
        }
        return { value: queue.shift()!, done: false };
      },
      async return(): Promise<IteratorResult<Event>> {
        self.streams = self.streams.filter((p) => p !== entry);
        return { value: undefined, done: true };
      },
    };
  }

  /** Wakes every stream at close: each ends once it has handed out what it holds (no value is added). */
  end(): void {
    for (const s of this.streams) s.wake();
  }
}
