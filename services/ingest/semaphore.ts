/**
 * A weighted semaphore: holders take `weight` units of a fixed capacity, waiters are served first come,
 * first served (a large waiter is not starved by a stream of small ones). Ingest uses one per process,
 * weighted by message size, so a burst of large messages parses a bounded amount at a time
 * (`INGEST_CONCURRENCY` maximum-size messages' worth) while small messages still flow in parallel.
 */
export class Semaphore {
  #available: number;
  readonly #waiters: { weight: number; grant: () => void }[] = [];

  constructor(readonly capacity: number) {
    if (!Number.isFinite(capacity) || capacity <= 0) throw new RangeError("capacity must be positive");
    this.#available = capacity;
  }

  /** Units held right now (for tests and metrics). */
  get inUse(): number {
    return this.capacity - this.#available;
  }

  /**
   * Resolves once `weight` units are held (a weight over the capacity is clamped to it); the returned
   * function releases them and is idempotent.
   */
  async acquire(weight = 1): Promise<() => void> {
    const w = Math.min(Math.max(weight, 0), this.capacity);
    if (this.#waiters.length === 0 && this.#available >= w) {
      this.#available -= w;
    } else {
      await new Promise<void>((grant) => this.#waiters.push({ weight: w, grant }));
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#available += w;
      this.#drain();
    };
  }

  /** Runs `fn` while holding `weight` units. */
  async run<T>(fn: () => Promise<T>, weight = 1): Promise<T> {
    const release = await this.acquire(weight);
    try {
      return await fn();
    } finally {
      release();
    }
  }

  #drain(): void {
    let head = this.#waiters[0];
    while (head && head.weight <= this.#available) {
      this.#waiters.shift();
      this.#available -= head.weight;
      head.grant();
      head = this.#waiters[0];
    }
  }
}
