/**
 * Waking the delivery workers after the intake commits, coalescing bursts: while one NOTIFY is in
 * flight (or waiting out {@link WAKE_INTERVAL_MS}), further requests collapse into one more NOTIFY
 * sent after it, so every commit is followed by a notification but a burst of messages does not cost
 * a round trip each. A lost wake-up only delays delivery until the workers' next poll.
 *
 * One instance per process (`ctx.ingest.wake`).
 */
import type { WorkerWake } from "../context.ts";
import type { Logger } from "../lib/logger.ts";

/**
 * Least time between two NOTIFYs of one process during a burst. Each NOTIFY is a round trip and a
 * transaction of its own; unthrottled, a steady stream of mail sent about one per message (measured:
 * 2.9 transactions per message on Postgres, lookup + store + ~0.9 NOTIFY). The first commit after a
 * quiet spell still notifies at once; during a burst the workers hear of new events at most this late.
 */
export const WAKE_INTERVAL_MS = 10;

/** Coalesces wake-up requests into calls of `notify` (see the module comment). */
export class CoalescedWake implements WorkerWake {
  #running = false;
  #again = false;
  /** `performance.now()` of the last notification sent */
  #last = 0;

  constructor(
    private readonly notify: () => Promise<void>,
    private readonly logger: Logger,
  ) {}

  request(): void {
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = true;
    void this.#send();
  }

  async #send(): Promise<void> {
    try {
      do {
        this.#again = false;
        const wait = this.#last + WAKE_INTERVAL_MS - performance.now();
        if (wait > 0) await Bun.sleep(wait);
        this.#last = performance.now();
        await this.notify();
      } while (this.#again);
    } catch (err) {
      this.logger.warn("could not wake workers", { err });
    } finally {
      this.#running = false;
    }
  }
}
