/**
 * The HTTP intake source: one listener (`HOST`/`PORT`) serving the API (the ops probes and `/v1`,
 * where `POST /v1/messages` is the upload) and, beside it, the dashboard under `/ui`. The API and the
 * dashboard are composed here, above both, so that neither imports the other. Like every intake source
 * it is started with its own `Intake` (ingest/intake.ts), and the upload hands messages to it.
 */
import { join } from "node:path";
import { type ApiOptions, createApi } from "./api/app.ts";
import type { AppContext } from "./context.ts";
import type { IntakeSource } from "./ingest/intake.ts";
import { uiApp } from "./ui/index.ts";

/**
 * Largest request body the listener reads, declared or chunked (past it Bun answers a bare 413 without
 * calling the app). It is the backstop, not the limit: the API's JSON bodies stop at 1 MiB
 * (api/body-limit.ts) and uploads at `MAX_RAW_BYTES` (ingest/ingest.ts, `ingest.too_large`, while they
 * stream to the spool), both with a JSON error and only after the credentials are checked. It bounds
 * what the dashboard's forms may send, and must stay above `MAX_RAW_BYTES` so the upload's own check
 * answers first.
 */
const MAX_REQUEST_BODY_BYTES = 60 * 1024 * 1024;

/** The API and the dashboard as one Elysia app; `opts` are passed to {@link createApi}. */
export function createHttpApp(ctx: AppContext, opts: ApiOptions = {}) {
  // A person opening the service's address in a browser lands on the dashboard.
  return createApi(ctx, opts)
    .use(uiApp(ctx))
    .get("/", ({ redirect }) => redirect("/ui", 302), { detail: { hide: true } });
}

/** The HTTP listener as an intake source (source type `api`). */
export const httpSource = {
  name: "api",
  async start(ctx, intake) {
    const app = createHttpApp(ctx, { intake });
    const server = Bun.serve({
      hostname: ctx.config.host,
      port: ctx.config.port,
      maxRequestBodySize: MAX_REQUEST_BODY_BYTES,
      fetch: (req) => app.handle(req),
    });
    const url = `http://${server.hostname}:${server.port}`;
    if (!ctx.config.setupToken) {
      // README.md#configuration: a generated setup token is stored in DATA_DIR/setup-token (0600) and printed at start
      ctx.logger.info("setup token", {
        file: join(ctx.config.dataDir, "setup-token"),
        token: ctx.setupToken,
      });
    }
    ctx.logger.info("http api listening", { url, docs: `${url}/v1/docs` });
    return {
      url,
      port: server.port,
      async stop() {
        await server.stop();
      },
    };
  },
} as const satisfies IntakeSource;
