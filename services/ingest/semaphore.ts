/**
 * A counting semaphore: at most `permits` holders at once, waiters served first come, first served.
 * Ingest uses one per process so a burst of large messages parses a bounded number at a time
 * (`INGEST_CONCURRENCY`), which bounds memory (issue 3: "limits on messages parsed at once").
 */
export class Semaphore {
  #available: number;
  readonly #waiters: (() => void)[] = [];

  constructor(readonly permits: number) {
    if (!Number.isInteger(permits) || permits < 1) throw new RangeError("permits must be a positive integer");
    this.#available = permits;
  }

  /** Holders right now (for tests and metrics). */
  get inUse(): number {
    return this.permits - this.#available;
  }

  /** Resolves once a permit is held; the returned function releases it (idempotent). */
  async acquire(): Promise<() => void> {
    if (this.#available > 0) {
      this.#available--;
    } else {
      // The releaser hands its permit straight to us, so #available is not touched on this path.
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiters.shift();
      if (next) next();
      else this.#available++;
    };
  }

  /** Runs `fn` while holding a permit. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    const release = await this.acquire();
    try {
      return await fn();
    } finally {
      release();
    }
  }
}
