/**
 * Admission to the intake pipeline: how many messages are parsed at once. Parsing holds many times a
 * message's size at its peak (raw bytes, the exact decoded attachments, the decoded bodies; see
 * mail/parse.ts), so large messages (≥ 1 MiB) share a budget of
 * `INGEST_CONCURRENCY` × 16 MiB raw bytes, weighted by size: with the default 4, two 30 MB messages,
 * or four 16 MB ones, or 64 of 1 MiB parse at once, and one 50 MiB message alone. This is what bounds
 * memory under a burst of large mail. Small messages have their own, wider limit so they are not
 * serialised behind fsync and commit latency.
 *
 * One instance per process (`ctx.ingest.admission`), shared by the SMTP and HTTP intakes.
 */
import type { IngestAdmission } from "../context.ts";
import { Semaphore } from "./semaphore.ts";

/** Messages at least this large share the large-message budget; smaller ones have their own slots. */
export const LARGE_MESSAGE_BYTES = 1024 * 1024;

/** Raw bytes of large messages parsed at once, per unit of `INGEST_CONCURRENCY` (4 → 64 MiB). */
export const LARGE_BUDGET_PER_SLOT = 16 * 1024 * 1024;

/** Small messages in the pipeline at once; their memory is negligible, their cost is latency. */
export const SMALL_MESSAGE_SLOTS = 64;

/** The slots of one process: a size-weighted budget for large messages, a count for small ones. */
export class AdmissionSlots implements IngestAdmission {
  readonly large: Semaphore;
  readonly small = new Semaphore(SMALL_MESSAGE_SLOTS);

  /** `ingestConcurrency` is `INGEST_CONCURRENCY`: large messages of 16 MiB parsed at once. */
  constructor(ingestConcurrency: number) {
    this.large = new Semaphore(ingestConcurrency * LARGE_BUDGET_PER_SLOT);
  }

  /** Takes a slot for a message of `size` raw bytes; the returned function releases it (idempotent). */
  acquire(size: number): Promise<() => void> {
    return size >= LARGE_MESSAGE_BYTES ? this.large.acquire(size) : this.small.acquire();
  }
}
