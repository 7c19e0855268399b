/**
 * Starts the roles of one process (api, smtp, worker) on a built context, and stops them in order on
 * shutdown: stop accepting (HTTP, SMTP), let in-flight deliveries finish, release the rest.
 */
import { join } from "node:path";
import { startRetentionSweeper } from "./attachments/retention.ts";
import type { AppContext } from "./context.ts";
import { startWorker } from "./delivery/worker.ts";
import { createHttpApp } from "./http.ts";
import { startSmtpServer } from "./ingest/smtp.ts";
import { spoolDir, sweepSpool } from "./ingest/spool.ts";

export type Role = "api" | "smtp" | "worker";

/** A listener could not bind its address: which one, why, and the variable that sets it. */
export class ListenError extends Error {
  constructor(
    readonly listener: "http" | "smtp",
    readonly address: string,
    readonly reason: "in_use" | "denied" | "not_local",
  ) {
    const [what, vars] =
      listener === "http" ? ["HTTP API", "HOST/PORT"] : ["SMTP listener", "SMTP_HOST/SMTP_PORT"];
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
async function listening<T>(
  listener: "http" | "smtp",
  address: string,
  start: () => T | Promise<T>,
): Promise<T> {
  try {
    return await start();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException | undefined)?.code;
    if (code === "EADDRINUSE") throw new ListenError(listener, address, "in_use");
    if (code === "EACCES") throw new ListenError(listener, address, "denied");
    if (code === "EADDRNOTAVAIL") throw new ListenError(listener, address, "not_local");
    throw err;
  }
}

export interface RunningRoles {
  httpUrl: string | null;
  smtpPort: number | null;
  stop(): Promise<void>;
}

export async function startRoles(ctx: AppContext, roles: Role[]): Promise<RunningRoles> {
  const stops: (() => Promise<void>)[] = [];
  try {
    return await startEach(ctx, roles, stops);
  } catch (err) {
    // What did start (a listener, the sweeper) is stopped again, so the caller can exit cleanly.
    for (const s of stops) await s().catch(() => {});
    throw err;
  }
}

async function startEach(
  ctx: AppContext,
  roles: Role[],
  stops: (() => Promise<void>)[],
): Promise<RunningRoles> {
  let httpUrl: string | null = null;
  let smtpPort: number | null = null;

  if (roles.includes("api") || roles.includes("smtp")) {
    // Both intakes spool to DATA_DIR/spool; files of processes killed mid-message are removed here.
    const dir = spoolDir(ctx.config.dataDir);
    void sweepSpool(dir)
      .then((removed) => removed > 0 && ctx.logger.info("removed stale spool files", { dir, removed }))
      .catch((err) => ctx.logger.warn("spool sweep failed", { dir, error: String(err) }));
    const store = ctx.blobs;
    if (store.sweepTemporaryFiles) {
      void store
        .sweepTemporaryFiles()
        .then((removed) => removed > 0 && ctx.logger.info("removed stale blob temp files", { removed }))
        .catch((err) => ctx.logger.warn("blob temp sweep failed", { error: String(err) }));
    }
  }
  if (roles.includes("api")) {
    const api = createHttpApp(ctx);
    const server = await listening("http", `${ctx.config.host}:${ctx.config.port}`, () =>
      Bun.serve({
        hostname: ctx.config.host,
        port: ctx.config.port,
        maxRequestBodySize: 60 * 1024 * 1024,
        fetch: (req) => api.handle(req),
      }),
    );
    httpUrl = `http://${server.hostname}:${server.port}`;
    stops.push(async () => {
      await server.stop();
    });
    if (!ctx.config.setupToken) {
      // contract §1: a generated setup token is stored in DATA_DIR/setup-token (0600) and printed at start
      ctx.logger.info("setup token", {
        file: join(ctx.config.dataDir, "setup-token"),
        token: ctx.setupToken,
      });
    }
    ctx.logger.info("http api listening", { url: httpUrl, docs: `${httpUrl}/v1/docs` });
    // Retention runs in the serve process (the one with the api role); sweeps are safe side by side.
    const sweeper = startRetentionSweeper(ctx, { intervalMs: 60 * 60 * 1000 });
    stops.push(() => sweeper.stop());
  }
  if (roles.includes("smtp") && ctx.config.smtpPort !== 0) {
    const smtp = await listening("smtp", `${ctx.config.smtpHost}:${ctx.config.smtpPort}`, () =>
      startSmtpServer(ctx),
    );
    smtpPort = smtp.port;
    stops.push(() => smtp.close());
  }
  if (roles.includes("worker")) {
    // Last in `stops`: intake stops first, then in-flight deliveries finish and unstarted claims go back.
    const worker = await startWorker(ctx);
    stops.push(() => worker.stop());
    ctx.logger.info("delivery worker started", { owner: worker.owner });
  }
  return {
    httpUrl,
    smtpPort,
    async stop() {
      for (const s of stops) await s();
    },
  };
}
