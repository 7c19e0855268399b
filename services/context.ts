/**
 * What every role (api, smtp, worker) is handed by the composition root. Built once in `main.ts`, or by
 * the test support with temp directories and an injected clock.
 */
import type { BlobStore } from "./attachments/blob-store.ts";
import type { Config } from "./config.ts";
import type { Database } from "./db/client.ts";
import type { Clock } from "./lib/clock.ts";
import type { SecretBox } from "./lib/crypto.ts";
import type { Logger } from "./lib/logger.ts";

/** Runs a custom_json mapper config (through the worker pool in production). */
export type MapperRunner = (
  config: unknown,
  input: { message: unknown; ctx: unknown; meta?: unknown },
) => Promise<unknown>;

export interface AppContext {
  config: Config;
  database: Database;
  blobs: BlobStore;
  box: SecretBox;
  clock: Clock;
  logger: Logger;
  setupToken: string;
  runMapper: MapperRunner;
  /** Tells local workers that new work is due (NOTIFY on Postgres). */
  wakeWorkers(): Promise<void>;
}

export const WORK_CHANNEL = "mailhook_work";
