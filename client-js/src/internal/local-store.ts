import { ImError, type Event } from '../protocol.js';
import { emptyState, type FailedEntry, type OutboxEntry, type State, type Storage } from '../storage.js';
import type { Identity } from '../client.js';

/**
 * The device's state (outbox, failed sends, events by (conv, seq), contiguous cursors) and its storage:
 * every change is saved as one snapshot, in order; `durable` holds per conversation the cursor of the
 * last state the storage reported durable, the only value ever acked.
 */
export class LocalStore {
  state!: State;
  readonly durable = new Map<string, number>();
  private binding: Promise<void> | null = null;
  private saveChain: Promise<void> = Promise.resolve();

  constructor(
    state: State,
    private storage: Storage | null,
    private readonly pickStorage: ((who: Identity) => Storage | Promise<Storage>) | null,
  ) {
    this.adopt(state);
  }

  private adopt(state: State): void {
    state.failed ??= [];
    this.state = state;
    this.durable.clear();
    for (const [conv, c] of Object.entries(state.cursors)) this.durable.set(conv, c);
  }

  /** False while the store is still to be picked (at the first `authed`). */
  get ready(): boolean {
    return this.storage !== null;
  }

  /** Opens the store `options.storage` picks for this identity and adopts its state (once). */
  bind(who: Identity): Promise<void> {
    this.binding ??= this.open(who).catch((e: unknown) => {
      this.binding = null;   // a later connect() tries again
      throw new ImError('STORAGE', `the local store could not be opened: ${e instanceof Error ? e.message : String(e)}`);
    });
    return this.binding;
  }

  private async open(who: Identity): Promise<void> {
    const storage = await this.pickStorage!(who);
    this.adopt((await storage.load()) ?? emptyState());
    this.storage = storage;
  }

  /** Saves a snapshot of the state taken now; resolves once it (and every earlier one) is durable. */
  persist(): Promise<void> {
    const snapshot = JSON.parse(JSON.stringify(this.state)) as State;
    const storage = this.storage!;
    const next = this.saveChain.then(() => storage.save(snapshot));
    this.saveChain = next.catch(() => undefined);
    return next;
  }

  /** Settles once every save asked for so far has (failed saves included). */
  flushed(): Promise<void> {
    return this.saveChain;
  }

  cursor(conv: string): number {
    return this.state.cursors[conv] ?? 0;
  }

  events(conv: string): Event[] {
    return Object.values(this.state.events[conv] ?? {}).sort((a, b) => a.seq - b.seq);
  }

  outbox(): OutboxEntry[] {
    return this.state.outbox.map((e) => ({ ...e }));
  }

  failed(): FailedEntry[] {
    return (this.state.failed ?? []).map((e) => ({ ...e }));
  }

  async dismissFailed(cmid: string): Promise<void> {
    const before = this.state.failed!.length;
    this.state.failed = this.state.failed!.filter((e) => e.cmid !== cmid);
    if (this.state.failed.length !== before) await this.persist();
  }

  /**
   * Puts the events above the cursor not yet held and advances the contiguous cursor (to `completeTo` when
   * every visible event up to it is in hand); returns the new events and cursor, or null if nothing changed.
   * Not saved yet: the caller persists, then calls `madeDurable`.
   */
  put(conv: string, events: Event[], completeTo: number | null): { fresh: Event[]; cursor: number } | null {
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
    if (fresh.length === 0 && !moved) return null;
    return { fresh, cursor: c };
  }

  madeDurable(conv: string, cursor: number): void {
    this.durable.set(conv, Math.max(cursor, this.durable.get(conv) ?? 0));
  }

  /** Drops a conversation's events and cursor (not saved yet). */
  drop(conv: string): void {
    delete this.state.events[conv];
    delete this.state.cursors[conv];
    this.durable.delete(conv);
  }
}
