/**
 * Builds the `AppContext` from a `Config`: database (+ migrations), blob store, secrets key, setup token,
 * mapper runner, and the per-process state of the intake (`ctx.ingest`). Shared by `main.ts` and the
 * test support so both wire the service the same way.
 */
import { join } from "node:path";
import { compileMapper, type MapperInput } from "../mapper/index.ts";
import type { BlobStore } from "./attachments/blob-store.ts";
import { FsBlobStore } from "./attachments/fs-store.ts";
import { S3BlobStore } from "./attachments/s3-store.ts";
import type { Config } from "./config.ts";
import { type AppContext, type MapperRunner, WORK_CHANNEL } from "./context.ts";
import { type Database, openDatabase, runMigrations } from "./db/client.ts";
import { createIngestState } from "./ingest/state.ts";
import { type Clock, systemClock } from "./lib/clock.ts";
import { createSecretBox, loadSecretsKey, readOrCreateSecretFile } from "./lib/crypto.ts";
import { DnsResolver } from "./lib/dns.ts";
import { randomToken } from "./lib/ids.ts";
import { createLogger, type Logger } from "./lib/logger.ts";

export interface BootstrapOptions {
  database?: Database;
  clock?: Clock;
  /** uniform random numbers in [0, 1); default `Math.random` */
  random?: () => number;
  logger?: Logger;
  blobs?: BlobStore;
  runMapper?: MapperRunner;
  /** skip migrations (the database is already migrated, e.g. a test template clone) */
  skipMigrations?: boolean;
}

export function createBlobStore(config: Config): BlobStore {
  if (config.blobStore === "s3" && config.s3) return new S3BlobStore(config.s3);
  return new FsBlobStore(join(config.dataDir, "blobs"));
}

export function loadSetupToken(config: Config): string {
  return (
    config.setupToken ?? readOrCreateSecretFile(config.dataDir, "setup-token", () => `st_${randomToken(32)}`)
  );
}

export async function bootstrap(config: Config, opts: BootstrapOptions = {}): Promise<AppContext> {
  const database =
    opts.database ?? (await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir }));
  if (!opts.skipMigrations) await runMigrations(database, config.databaseUrl);
  const box = createSecretBox(loadSecretsKey(config.dataDir, config.secretsKey));
  // In-process by default (tests, tools); main.ts passes the worker pool's runner.
  const runMapper: MapperRunner =
    opts.runMapper ?? (async (mapperConfig, input) => compileMapper(mapperConfig)(input as MapperInput));
  const logger = opts.logger ?? createLogger(config.logLevel);
  const wakeWorkers = () => database.notify(WORK_CHANNEL);
  return {
    config,
    database,
    blobs: opts.blobs ?? createBlobStore(config),
    box,
    clock: opts.clock ?? systemClock,
    random: opts.random ?? Math.random,
    logger,
    setupToken: loadSetupToken(config),
    runMapper,
    wakeWorkers,
    ingest: createIngestState({ ingestConcurrency: config.ingestConcurrency, database, wakeWorkers, logger }),
    dns: new DnsResolver({ servers: config.dnsServers }),
  };
}
