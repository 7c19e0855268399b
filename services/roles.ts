/**
 * Starts the roles of one process (api, smtp, worker) on a built context, and stops them in order on
 * shutdown: stop accepting (HTTP, SMTP), let in-flight deliveries finish, release the rest.
 */
import { join } from "node:path";
import { createApi } from "./api/app.ts";
import { FsBlobStore } from "./attachments/fs-store.ts";
import { startRetentionSweeper } from "./attachments/retention.ts";
import type { AppContext } from "./context.ts";
import { startWorker } from "./delivery/worker.ts";
import { startSmtpServer } from "./ingest/smtp.ts";
import { spoolDir, sweepSpool } from "./ingest/spool.ts";

export type Role = "api" | "smtp" | "worker";

export interface RunningRoles {
  httpUrl: string | null;
  smtpPort: number | null;
  stop(): Promise<void>;
}

export async function startRoles(ctx: AppContext, roles: Role[]): Promise<RunningRoles> {
  const stops: (() => Promise<void>)[] = [];
  let httpUrl: string | null = null;
  let smtpPort: number | null = null;

  if (roles.includes("api") || roles.includes("smtp")) {
    // Both intakes spool to DATA_DIR/spool; files of processes killed mid-message are removed here.
    const dir = spoolDir(ctx.config.dataDir);
    void sweepSpool(dir)
      .then((removed) => removed > 0 && ctx.logger.info("removed stale spool files", { dir, removed }))
      .catch((err) => ctx.logger.warn("spool sweep failed", { dir, error: String(err) }));
    if (ctx.blobs instanceof FsBlobStore) {
      const store = ctx.blobs;
      void store
        .sweepTemporaryFiles()
        .then((removed) => removed > 0 && ctx.logger.info("removed stale blob temp files", { removed }))
        .catch((err) => ctx.logger.warn("blob temp sweep failed", { error: String(err) }));
    }
  }
  if (roles.includes("api")) {
    const api = createApi(ctx);
    const server = Bun.serve({
      hostname: ctx.config.host,
      port: ctx.config.port,
      maxRequestBodySize: 60 * 1024 * 1024,
      fetch: (req) => api.handle(req),
    });
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
    const smtp = await startSmtpServer(ctx);
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
