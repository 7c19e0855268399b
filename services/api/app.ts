/**
 * The HTTP API: every operation under `/v1`, one error handler, the OpenAPI 3.1 document at
 * `/v1/openapi.json` and a rendered reference at `/v1/docs` (docs-page.ts: served from the service
 * itself, not from a CDN).
 */
import { Elysia } from "elysia";
import pkg from "../../package.json" with { type: "json" };
import type { AppContext } from "../context.ts";
import { Intake } from "../ingest/intake.ts";
import { adminApi } from "./admin.ts";
import { attachmentsApi } from "./attachments.ts";
import { docsPageApi } from "./docs-page.ts";
import { domainsApi } from "./domains.ts";
import { endpointsApi } from "./endpoints.ts";
import { createErrorHandler } from "./errors.ts";
// After @elysiajs/openapi: it replaces TypeBox format checks with slow zod-backed ones (formats.ts).
import "./formats.ts";
import { eventsApi } from "./events.ts";
import { rejectUnusableInput } from "./input-guards.ts";
import { jobsApi } from "./jobs.ts";
import { mailboxesApi } from "./mailboxes.ts";
import { mapperApi } from "./mapper.ts";
import { messageReadApi } from "./message-read.ts";
import { messagesApi } from "./messages.ts";
import { API_EXAMPLES, API_SCHEMAS, API_WEBHOOKS } from "./openapi-content.ts";
import { buildOpenApiDocument } from "./openapi-document.ts";
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
    .use(mapperApi(ctx))
    .use(mailboxesApi(ctx))
    .use(messageReadApi(ctx))
    .use(domainsApi(ctx));
  for (const plugin of opts.extra ?? []) v1.use(plugin(ctx) as Elysia);
  // Built once, on first request, from every route mounted above (openapi-document.ts).
  let document: Record<string, unknown> | undefined;
  v1.get(
    "/openapi.json",
    () =>
      (document ??= buildOpenApiDocument(v1, {
        info: {
          title,
          version: pkg.version,
          description:
            "Email to webhook: projects, endpoints, signing secrets, routes, message intake, events and replays, attachment downloads, the custom_json mapper. What the service POSTs to your endpoints is described under `webhooks`.",
        },
        servers: [{ url: ctx.config.publicBaseUrl }],
        securitySchemes: {
          apiKey: { type: "apiKey", in: "header", name: "X-API-Key" },
          setupToken: { type: "apiKey", in: "header", name: "X-Setup-Token" },
        },
        webhooks: API_WEBHOOKS,
        schemas: API_SCHEMAS,
        examples: API_EXAMPLES,
      })),
    { detail: { hide: true } },
  );
  return new Elysia({ normalize: false }).onError(createErrorHandler(ctx.logger)).use(opsApi(ctx)).use(v1);
}
