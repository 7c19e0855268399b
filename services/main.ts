/**
 * Composition root: config → db → blobs → mapper pool → roles.
 *   bun services/main.ts serve    API + SMTP listener + delivery worker (the embedded default)
 *   bun services/main.ts worker   delivery worker only (needs DATABASE_URL)
 *   bun services/main.ts migrate  apply migrations and exit
 */

import { accessSync, constants, mkdirSync } from "node:fs";
import { createMapperPool, loadCodeCopies, type MapperInput, setCodeCopies } from "../mapper/index.ts";
import { bootstrap } from "./bootstrap.ts";
import { ConfigError, loadConfig } from "./config.ts";
import {
  DatabaseLockedError,
  DatabaseUnavailableError,
  openDatabase,
  runMigrations,
  waitForPostgres,
} from "./db/client.ts";
import { loadTlsPair } from "./ingest/smtp.ts";
import { createLogger } from "./lib/logger.ts";
import { makeDataDirPrivate, PRIVATE_DIR_MODE, usePrivateUmask } from "./lib/private-files.ts";
import { secretsKeyProblem } from "./resources/secrets-key-check.ts";
import { ALL_ROLES, ListenError, type Role, startRoles } from "./roles.ts";

async function main(): Promise<void> {
  // DATA_DIR holds all stored mail and the keys: everything this process creates from here on is
  // private to its user (0600 files, 0700 directories), whatever mode the creating code asks for.
  usePrivateUmask();
  const command = process.argv[2] ?? "serve";
  if (!["serve", "worker", "migrate"].includes(command)) {
    console.error(`unknown command ${command}; expected serve, worker or migrate`);
    process.exit(2);
  }
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
    // The STARTTLS key pair is checked before anything listens (unreadable, not PEM, not a pair).
    if (command === "serve" && config.smtpPort !== 0) loadTlsPair(config);
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(78); // EX_CONFIG
    }
    throw err;
  }
  // DATA_DIR holds the keys, the spool, file blobs and the embedded database: every role writes there.
  try {
    mkdirSync(config.dataDir, { recursive: true, mode: PRIVATE_DIR_MODE });
    accessSync(config.dataDir, constants.W_OK | constants.X_OK);
  } catch (err) {
    console.error(`DATA_DIR ${config.dataDir} cannot be used: ${(err as Error).message}`);
    process.exit(73); // EX_CANTCREAT
  }
  const logger = createLogger(config.logLevel);
  // A directory from an older version (0755 directories, 0666 database files) is closed up before
  // anything reads it; what cannot be changed (a volume of another user) is a warning, not a stop.
  makeDataDirPrivate(config.dataDir, logger);
  if (config.databaseUrl) {
    await waitForPostgres(config.databaseUrl, config.databaseWaitS * 1000, (attempt, reason) =>
      console.error(`waiting for Postgres (attempt ${attempt}): ${reason}`),
    );
  }
  if (command === "migrate") {
    const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
    await runMigrations(database, config.databaseUrl);
    await database.close();
    console.log("migrations applied");
    return;
  }
  if (command === "worker" && !config.databaseUrl) {
    console.error("bun run worker needs DATABASE_URL (the embedded database belongs to one `serve` process)");
    process.exit(78);
  }
  // Mappers run off the main thread with a hard per-task deadline (a runaway worker is replaced).
  // The mapper's code copies load here first (the pool's workers load their own at start): a copy that
  // cannot load stops start-up with one line instead of failing every mapper task later.
  setCodeCopies(config.mapperCodeCopies);
  try {
    loadCodeCopies();
  } catch (err) {
    console.error(`${(err as Error).message} (MAPPER_CODE_COPIES=0 runs mappers without copies)`);
    process.exit(70);
  }
  const pool = createMapperPool({ size: config.mapperThreads, codeCopies: config.mapperCodeCopies });
  const ctx = await bootstrap(config, {
    logger,
    runMapper: (mapperConfig, input) => pool.run(mapperConfig, input as MapperInput),
  });
  // A process with another SECRETS_KEY than the one the database's secrets were sealed with would
  // fail every delivery: it stops here with one line instead.
  const keyProblem = await secretsKeyProblem(ctx);
  if (keyProblem) {
    console.error(keyProblem);
    await pool.close();
    await ctx.database.close();
    process.exit(78); // EX_CONFIG
  }
  const roles: readonly Role[] = command === "serve" ? ALL_ROLES : ["worker"];
  // A stop asked for while the roles start is carried out once they have started (with no handler
  // yet, SIGTERM would end the process at once: no graceful stop, and the stale spool files of a
  // killed predecessor, which the start sweeps, could be left behind).
  let requested: string | null = null;
  let stop = async (signal: string) => {
    requested ??= signal;
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
  let running: Awaited<ReturnType<typeof startRoles>>;
  try {
    running = await startRoles(ctx, roles);
  } catch (err) {
    if (!(err instanceof ListenError || err instanceof ConfigError)) throw err;
    console.error(err.message);
    await pool.close();
    await ctx.database.close();
    if (err instanceof ConfigError || err.reason === "not_local") process.exit(78); // EX_CONFIG
    process.exit(err.reason === "in_use" ? 75 : 77); // EX_TEMPFAIL / EX_NOPERM
  }

  let stopping = false;
  stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    ctx.logger.info("shutting down", { signal });
    await running.stop();
    await pool.close();
    await ctx.database.close();
    process.exit(0);
  };
  if (requested !== null) void stop(requested);
}

try {
  await main();
} catch (err) {
  // A second `serve` on the same DATA_DIR, or a Postgres that is not there: say so and stop.
  if (err instanceof DatabaseLockedError) {
    console.error(err.message);
    process.exit(75); // EX_TEMPFAIL: it can start once the other process has stopped
  }
  if (err instanceof DatabaseUnavailableError) {
    console.error(err.message);
    process.exit(69); // EX_UNAVAILABLE
  }
  throw err;
}
