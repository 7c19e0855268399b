/**
 * The HTTP API: every operation under `/v1`, one error handler, the OpenAPI 3.1 document at
 * `/v1/openapi.json` and a rendered reference at `/v1/docs` (docs-page.ts: served from the service
 * itself, not from a CDN).
 */
import { openapi } from "@elysiajs/openapi";
import { Elysia } from "elysia";
import pkg from "../../package.json" with { type: "json" };
import type { AppContext } from "../context.ts";
import { Intake } from "../ingest/intake.ts";
import { adminApi } from "./admin.ts";
import { attachmentsApi } from "./attachments.ts";
import { docsPageApi } from "./docs-page.ts";
import { endpointsApi } from "./endpoints.ts";
import { createErrorHandler } from "./errors.ts";
// After @elysiajs/openapi: it replaces TypeBox format checks with slow zod-backed ones (formats.ts).
import "./formats.ts";
import { eventsApi } from "./events.ts";
import { rejectUnusableInput } from "./input-guards.ts";
import { jobsApi } from "./jobs.ts";
import { mapperApi } from "./mapper.ts";
import { messagesApi } from "./messages.ts";
import { opsApi } from "./ops.ts";
import { projectApi } from "./project.ts";
import { routesApi } from "./routes.ts";
import { signingSecretsApi } from "./signing-secrets.ts";

/** What {@link createApi} may be given besides the context. */
export interface ApiOptions {
  /** the HTTP upload's intake (the HTTP source passes its own); a new one for source `api` if absent */
  intake?: Intake;
  /** plugins mounted under `/v1` after the API's own (tests add operations that fail on purpose) */
  extra?: ((ctx: AppContext) => unknown)[];
}

/** Builds the API: the ops probes and everything under `/v1`. */
export function createApi(ctx: AppContext, opts: ApiOptions = {}) {
  const title = "mailhook API";
  const v1 = new Elysia({ prefix: "/v1", normalize: false })
    .use(
      openapi({
        // The plugin's own page loads its viewer from a public CDN; docsPageApi serves a pinned one.
        provider: null,
        specPath: "/openapi.json",
        // The dashboard's HTML pages are not API operations.
        exclude: { paths: [/^\/ui(\/|$)/] },
        documentation: {
          openapi: "3.1.0",
          info: {
            title,
            version: pkg.version,
            description:
              "Email to webhook: projects, endpoints, signing secrets, routes, message intake, events and replays, attachment downloads, the custom_json mapper.",
          },
          servers: [{ url: ctx.config.publicBaseUrl }],
          components: {
            securitySchemes: {
              apiKey: { type: "apiKey", in: "header", name: "X-API-Key" },
              setupToken: { type: "apiKey", in: "header", name: "X-Setup-Token" },
            },
          },
        },
      }),
    )
    .onError(createErrorHandler(ctx.logger))
    .onTransform(rejectUnusableInput)
    .use(docsPageApi(ctx, title))
    .use(adminApi(ctx))
    .use(projectApi(ctx))
    .use(endpointsApi(ctx))
    .use(signingSecretsApi(ctx))
    .use(attachmentsApi(ctx))
    .use(routesApi(ctx))
    .use(eventsApi(ctx))
    .use(jobsApi(ctx))
    .use(messagesApi(ctx, opts.intake ?? new Intake(ctx, "api")))
    .use(mapperApi(ctx));
  for (const plugin of opts.extra ?? []) v1.use(plugin(ctx) as Elysia);
  return new Elysia({ normalize: false }).onError(createErrorHandler(ctx.logger)).use(opsApi(ctx)).use(v1);
}
