/** The client's timers, so that close and a fatal error can cancel every one. */
export class Timers {
  private readonly live = new Set<ReturnType<typeof setTimeout>>();

  /** Runs `fn` after `ms` unless cleared first. */
  after(ms: number, fn: () => void): ReturnType<typeof setTimeout> {
    const t = setTimeout(() => {
      this.live.delete(t);
      fn();
    }, ms);
    this.live.add(t);
    return t;
  }

  cancel(t: ReturnType<typeof setTimeout>): void {
    clearTimeout(t);
    this.live.delete(t);
  }

  /** Resolves after `ms`; never, once cleared. */
  delay(ms: number): Promise<void> {
    return new Promise((resolve) => this.after(ms, resolve));
  }

  clear(): void {
    for (const t of this.live) clearTimeout(t);
    this.live.clear();
  }
}

/** Exponential backoff with jitter: a random delay in [d/2, d], d = min(max, min·2^attempt). */
export function backoff(attempt: number, minMs: number, maxMs: number): number {
  const d = Math.min(maxMs, minMs * 2 ** Math.min(attempt, 20));
  return d / 2 + Math.random() * (d / 2);
}
