/**
 * Builds the intake's per-process state (`ctx.ingest`, declared in context.ts): admission slots, the
 * coalesced worker wake-up, the recent project lookups and the group committer. Called once by
 * bootstrap; every intake of the process (SMTP and HTTP) shares what it returns.
 */
import type { IngestState } from "../context.ts";
import type { Database } from "../db/client.ts";
import type { Logger } from "../lib/logger.ts";
import { AdmissionSlots } from "./admission.ts";
import { createGroupCommitter } from "./group-commit.ts";
import { RecentProjectLookups } from "./lookup.ts";
import { CoalescedWake } from "./wake.ts";

/** What the intake's state is built from. */
export interface IngestStateOptions {
  /** `INGEST_CONCURRENCY`: the large-message budget, in 16 MiB messages (admission.ts) */
  ingestConcurrency: number;
  database: Database;
  /** sends one wake-up to the delivery workers (the context's `wakeWorkers`) */
  wakeWorkers: () => Promise<void>;
  logger: Logger;
}

/** A fresh intake state; see the module comment. */
export function createIngestState(opts: IngestStateOptions): IngestState {
  return {
    admission: new AdmissionSlots(opts.ingestConcurrency),
    wake: new CoalescedWake(opts.wakeWorkers, opts.logger),
    lookups: new RecentProjectLookups(),
    commits: createGroupCommitter(opts.database),
    recipientChanges: new ChangeCounter(),
  };
}

/** A plain counter (`ctx.ingest.recipientChanges`). */
class ChangeCounter {
  generation = 0;
  bump(): void {
    this.generation++;
  }
}
