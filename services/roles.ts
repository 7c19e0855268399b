/**
 * The roles a process can run, as one list ({@link ROLES}): each starts on a built context and hands
 * back how to stop it. `startRoles` starts the requested ones in list order and stops them intake
 * first: stop accepting (HTTP, SMTP), then let in-flight deliveries finish and release the rest.
 *
 * An intake source that runs on its own (ingest/intake.ts `IntakeSource`) becomes a role through
 * {@link intakeRole}; adding one is its file plus one entry here (docs/architecture.md, "Adding an
 * intake source").
 */
import { startRetentionSweeper } from "./attachments/retention.ts";
import type { Config } from "./config.ts";
import type { AppContext } from "./context.ts";
import { startWorker } from "./delivery/worker.ts";
import { httpSource } from "./http.ts";
import { imapSource } from "./ingest/imap.ts";
import { Intake, type IntakeSource } from "./ingest/intake.ts";
import { smtpSource } from "./ingest/smtp.ts";
import { spoolDir, sweepSpool } from "./ingest/spool.ts";
import { startSearchIndexer } from "./resources/message-search-index.ts";

/** The listeners a role may bind: how start-up names each, and the variables that set its address. */
const LISTENERS = {
  http: { what: "HTTP API", vars: "HOST/PORT", address: (c: Config) => `${c.host}:${c.port}` },
  smtp: {
    what: "SMTP listener",
    vars: "SMTP_HOST/SMTP_PORT",
    address: (c: Config) => `${c.smtpHost}:${c.smtpPort}`,
  },
} as const;

type Listener = keyof typeof LISTENERS;

/** A listener could not bind its address: which one, why, and the variable that sets it. */
export class ListenError extends Error {
  constructor(
    readonly listener: Listener,
    readonly address: string,
    readonly reason: "in_use" | "denied" | "not_local",
  ) {
    const { what, vars } = LISTENERS[listener];
    const why = {
      in_use: `the address is in use by another process (stop it, or set ${vars})`,
      denied: `permission denied (ports below 1024 need privileges; set ${vars})`,
      not_local: `that host is not an address of this machine (set ${vars})`,
    }[reason];
    super(`cannot start the ${what} on ${address}: ${why}`);
    this.name = "ListenError";
  }
}

/** Runs a listen call; an address in use or a denied port becomes a ListenError, anything else is rethrown. */
async function listening<T>(listener: Listener, config: Config, start: () => T | Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (err) {
    const address = LISTENERS[listener].address(config);
    const code = (err as NodeJS.ErrnoException | undefined)?.code;
    if (code === "EADDRINUSE") throw new ListenError(listener, address, "in_use");
    if (code === "EACCES") throw new ListenError(listener, address, "denied");
    if (code === "EADDRNOTAVAIL") throw new ListenError(listener, address, "not_local");
    throw err;
  }
}

/** A started role: where it listens, if it does, and how to stop it. */
export interface StartedRole {
  /** the HTTP base URL of a role serving HTTP */
  url?: string;
  /** the port of a role listening for another protocol */
  port?: number;
  stop(): Promise<void>;
}

/** One role a process can run. */
export interface RoleDefinition {
  readonly name: string;
  /** takes mail in: stops before the others, and stale spool files are swept before it starts */
  readonly intake: boolean;
  start(ctx: AppContext): Promise<StartedRole>;
}

/**
 * An intake source as a role, with an {@link Intake} of its own (its recipient cache lives there).
 * `listener` names the address it binds, so a port in use is reported as a {@link ListenError}.
 */
function intakeRole<N extends IntakeSource["name"]>(
  source: IntakeSource & { name: N },
  listener?: Listener,
): RoleDefinition & { name: N } {
  return {
    name: source.name,
    intake: true,
    start: (ctx) => {
      const start = () => source.start(ctx, new Intake(ctx, source.name));
      return listener ? listening(listener, ctx.config, start) : start();
    },
  };
}

/**
 * `role` with the retention sweeper running beside it: retention runs in the serve process, the one
 * with the api role (sweeps are safe side by side), and stops after the role has stopped.
 */
function withRetention<R extends RoleDefinition>(role: R): R {
  return {
    ...role,
    async start(ctx) {
      const started = await role.start(ctx);
      const sweeper = startRetentionSweeper(ctx, { intervalMs: 60 * 60 * 1000 });
      return {
        ...started,
        async stop() {
          try {
            await started.stop();
          } finally {
            await sweeper.stop();
          }
        },
      };
    },
  };
}

/** The delivery worker role; it stops after every intake role, so in-flight deliveries finish. */
async function startDelivery(ctx: AppContext): Promise<StartedRole> {
  const worker = await startWorker(ctx);
  ctx.logger.info("delivery worker started", { owner: worker.owner });
  return { stop: () => worker.stop() };
}

/** Every role, in start order. */
export const ROLES = [
  withRetention(intakeRole(httpSource, "http")),
  intakeRole(smtpSource, "smtp"),
  intakeRole(imapSource),
  { name: "worker", intake: false, start: startDelivery },
] as const satisfies readonly RoleDefinition[];

/** A role's name. */
export type Role = (typeof ROLES)[number]["name"];

/** Every role's name, in start order: what `serve` runs. */
export const ALL_ROLES: readonly Role[] = ROLES.map((r) => r.name);

export interface RunningRoles {
  httpUrl: string | null;
  smtpPort: number | null;
  stop(): Promise<void>;
}

/** Starts the named roles in {@link ROLES} order; if one fails, those already started are stopped again. */
export async function startRoles(ctx: AppContext, roles: readonly Role[]): Promise<RunningRoles> {
  const started = await startRoleList(
    ctx,
    ROLES.filter((r) => roles.includes(r.name)),
  );
  return {
    httpUrl: started.get("api")?.url ?? null,
    smtpPort: started.get("smtp")?.port ?? null,
    stop: started.stop,
  };
}

/**
 * Starts `roles` in order, sweeping stale spool files first when any of them takes mail in. `stop`
 * stops the intake roles first (no new mail), then the rest (in-flight deliveries finish), each group
 * in start order. If a start fails, what did start is stopped again and the error is rethrown, so the
 * caller can exit cleanly.
 */
export async function startRoleList(
  ctx: AppContext,
  roles: readonly RoleDefinition[],
): Promise<{ get(name: string): StartedRole | undefined; stop(): Promise<void> }> {
  const started = new Map<string, StartedRole>();
  const stopOrder = () =>
    [...roles.filter((r) => r.intake), ...roles.filter((r) => !r.intake)].flatMap(
      (r) => started.get(r.name) ?? [],
    );
  // The sweep runs beside the start; a stop waits for it, so no stale file outlives a graceful stop.
  let sweeping: Promise<void> = Promise.resolve();
  // Every process that takes mail in also indexes it for search, in the background.
  const indexer = roles.some((r) => r.intake) ? startSearchIndexer(ctx) : null;
  try {
    if (roles.some((r) => r.intake)) sweeping = sweepStaleFiles(ctx);
    for (const role of roles) started.set(role.name, await role.start(ctx));
  } catch (err) {
    for (const running of stopOrder()) await running.stop().catch(() => {});
    await indexer?.stop();
    throw err;
  }
  return {
    get: (name) => started.get(name),
    async stop() {
      for (const running of stopOrder()) await running.stop();
      await indexer?.stop();
      await sweeping;
    },
  };
}

/**
 * Every intake spools to DATA_DIR/spool; files of processes killed mid-message are removed here, in the
 * background, as are the file blob store's temporary files. Resolves when both sweeps are done.
 */
function sweepStaleFiles(ctx: AppContext): Promise<void> {
  const dir = spoolDir(ctx.config.dataDir);
  const spool = sweepSpool(dir)
    .then((removed) => {
      if (removed > 0) ctx.logger.info("removed stale spool files", { dir, removed });
    })
    .catch((err) => ctx.logger.warn("spool sweep failed", { dir, error: String(err) }));
  const store = ctx.blobs;
  const temporary = store.sweepTemporaryFiles
    ? store
        .sweepTemporaryFiles()
        .then((removed) => {
          if (removed > 0) ctx.logger.info("removed stale blob temp files", { removed });
        })
        .catch((err) => ctx.logger.warn("blob temp sweep failed", { error: String(err) }))
    : Promise.resolve();
  return Promise.all([spool, temporary]).then(() => undefined);
}
