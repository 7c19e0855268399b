/**
 * Attachment downloads (spec: Endpoints; docs/api.md, docs/attachments.md):
 * - `GET /v1/messages/{message_id}/attachments/{attachment_id}/url` (project API key) issues a URL;
 * - `GET|HEAD /v1/attachments/{token}` is the app proxy. It takes NO API key: the token is the
 *   credential. An `X-API-Key` sent there is ignored — never validated, never required — so a backend
 *   that adds its key to every request still downloads, and a wrong key reveals nothing.
 */
import { Elysia, t } from "elysia";
import { serveProxyDownload } from "../attachments/proxy.ts";
import { issueDownloadUrl, MAX_TTL_S, MIN_TTL_S } from "../attachments/tokens.ts";
import type { AppContext } from "../context.ts";
import { AppError } from "../lib/errors.ts";
import { projectAuth } from "./auth.ts";
import { authErrors, ErrorBody, Timestamp } from "./schemas.ts";

export const DownloadUrlResponse = t.Object(
  {
    url: t.String({ description: "URL to fetch: the app proxy or a presigned storage URL" }),
    expires_at: Timestamp,
    method: t.Literal("GET"),
    headers: t.Record(t.String(), t.String(), { description: "headers to send with the fetch" }),
  },
  { $id: "#/components/schemas/DownloadUrl" },
);

const UrlParams = t.Object({
  message_id: t.String({
    description:
      "URL-encoded Message-ID of the payload's `message.message_id`, brackets optional; or the message's `msg_…` id",
  }),
  attachment_id: t.String({ description: "the attachment descriptor's `id`" }),
});

const UrlQuery = t.Object({
  multi_use: t.Optional(
    t.String({ description: "true/false or 1/0; default false", examples: ["true", "false"] }),
  ),
  ttl_seconds: t.Optional(
    t.String({
      pattern: "^[0-9]+$",
      description: `lifetime in seconds, ${MIN_TTL_S} to ${MAX_TTL_S}; default 900 single-use, 300 multi-use`,
    }),
  ),
});

const TokenParams = t.Object({ token: t.String({ description: "opaque download token" }) });

/** The proxy's path under the service root (the API is mounted at `/v1`). */
const PROXY_PATH = /^\/v1\/attachments\/([^/]+)$/;

function conditionalHeaders(request: Request) {
  return { rangeHeader: request.headers.get("range"), ifRangeHeader: request.headers.get("if-range") };
}

interface ProxyContext {
  params: { token: string };
  request: Request;
  set: { headers: Record<string, string | number> };
}

/**
 * Returns the download `Response` so that Elysia passes it to Bun as it is. Elysia (1.4 mapResponse)
 * rebuilds a returned Response as `new Response(res.body, …)` whenever `set.headers` is not empty (the
 * request-id hook always sets one), swapping the store's body (a file slice Bun can send with sendfile)
 * for a generic stream. So the hooks' headers move onto the response and `set.headers` is left empty.
 */
function handOver(res: Response, set: ProxyContext["set"]): Response {
  for (const [name, value] of Object.entries(set.headers)) {
    if (!res.headers.has(name)) res.headers.set(name, String(value));
    delete set.headers[name];
  }
  return res;
}

/** `multi_use`: true/false/1/0 (case-insensitive), anything else is 422 at `/multi_use`. */
function parseMultiUse(raw: string | undefined): boolean {
  if (raw === undefined) return false;
  const v = raw.trim().toLowerCase();
  if (v === "true" || v === "1") return true;
  if (v === "false" || v === "0") return false;
  throw new AppError("request.invalid", "the request query is invalid", [
    { path: "/multi_use", message: "expected true, false, 1 or 0" },
  ]);
}

/** The URL endpoint, behind the project API key. */
function downloadUrlApi(ctx: AppContext) {
  return new Elysia({ tags: ["attachments"] }).use(projectAuth(ctx)).get(
    "/messages/:message_id/attachments/:attachment_id/url",
    ({ auth, params, query }) =>
      issueDownloadUrl(ctx, {
        projectId: auth.projectId,
        messageId: params.message_id,
        attachmentId: params.attachment_id,
        multiUse: parseMultiUse(query.multi_use),
        ttlSeconds: query.ttl_seconds === undefined ? undefined : Number(query.ttl_seconds),
      }),
    {
      params: UrlParams,
      query: UrlQuery,
      response: { 200: DownloadUrlResponse, 404: ErrorBody, 409: ErrorBody, 422: ErrorBody, ...authErrors },
      detail: {
        summary: "Get a short-lived download URL for an attachment",
        security: [{ apiKey: [] }],
      },
    },
  );
}

/**
 * The proxy. Handlers return the `Response` from `buildDownloadResponse` untouched so Elysia hands its
 * lazy body (a file slice served with sendfile, or a store stream) to Bun without buffering.
 */
function downloadProxyApi(ctx: AppContext) {
  const serve = async ({ params, request, set }: ProxyContext) =>
    handOver(
      await serveProxyDownload(ctx, {
        token: params.token,
        method: request.method === "HEAD" ? "HEAD" : "GET",
        ...conditionalHeaders(request),
      }),
      set,
    );
  const detail = {
    summary: "Download an attachment (no API key: the URL is the credential)",
    description:
      "Single byte ranges (RFC 9110 §14) give 206 with Content-Range. A single-use URL is consumed by the first GET that reaches the file; HEAD never consumes it.",
    responses: {
      200: {
        description: "the file",
        content: { "application/octet-stream": { schema: { type: "string" as const, format: "binary" } } },
      },
      206: { description: "the requested byte range" },
      400: { description: "attachments.range_invalid" },
      404: { description: "attachments.not_found" },
      410: { description: "attachments.expired or attachments.reused" },
      416: { description: "attachments.range_not_satisfiable (Content-Range: bytes */<size>)" },
    },
  };
  return (
    new Elysia({ tags: ["attachments"] })
      // Elysia answers HEAD on a dynamic path with the GET handler and then replaces Content-Length with
      // the length of the body it reads (compose.ts, 1.4): HEAD would report 0 or read the whole file.
      // So HEAD is answered here, before routing, with the real length (RFC 9110 §9.3.2).
      .onRequest(({ request }) => {
        if (request.method !== "HEAD") return;
        const token = PROXY_PATH.exec(new URL(request.url).pathname)?.[1];
        if (token === undefined) return;
        return serveProxyDownload(ctx, { token, method: "HEAD", ...conditionalHeaders(request) });
      })
      .get("/attachments/:token", serve, { params: TokenParams, detail })
  );
}

/** Mounts the URL endpoint and the download proxy under `/v1`. */
export function attachmentsApi(ctx: AppContext) {
  return new Elysia().use(downloadProxyApi(ctx)).use(downloadUrlApi(ctx));
}
