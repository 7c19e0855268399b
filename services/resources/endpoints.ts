/**
 * Webhook endpoints: URL (http/https, no userinfo), custom headers (sealed at rest; values of secret
 * headers are masked in every response and capture), and a per-attempt timeout.
 */
import { type Static, Type } from "@sinclair/typebox";
import { and, asc, eq, isNull } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import { endpoints, routes } from "../db/schema/index.ts";
import { AppError, type ErrorDetail } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import { Integer, Timestamp } from "../lib/schema.ts";

export const MASK = "***";
export const DEFAULT_TIMEOUT_S = 10;
export const MAX_TIMEOUT_S = 60;
const MAX_HEADERS = 30;

/** Headers the service sets itself; a custom header may not override them (docs/delivery.md). */
export const RESERVED_HEADERS = new Set([
  "content-type",
  "content-length",
  "host",
  "user-agent",
  "x-service-signature",
  "x-idempotency-key",
  "webhook-id",
  "webhook-timestamp",
  "webhook-signature",
  "connection",
  "transfer-encoding",
  "accept-encoding",
]);
/** Always treated as secret, whether or not listed in `secret_headers`. */
export const ALWAYS_SECRET = ["authorization", "proxy-authorization", "cookie", "x-api-key"];

export interface EndpointInput {
  url?: string;
  headers?: Record<string, string>;
  secret_headers?: string[];
  timeout_s?: number;
}

/** An endpoint as the API shows it: header values of secret headers are masked. */
export const EndpointViewSchema = Type.Object({
  id: Type.String(),
  url: Type.String(),
  headers: Type.Record(Type.String(), Type.String()),
  secret_headers: Type.Array(Type.String()),
  timeout_s: Integer(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
/** See {@link EndpointViewSchema}. */
export type EndpointView = Static<typeof EndpointViewSchema>;

/** Validates an endpoint URL; returns the reason or null. */
export function endpointUrlProblem(url: string): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return "not a valid absolute URL";
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") return "only http and https URLs are allowed";
  if (u.username || u.password) return "credentials in the URL are not allowed; use a custom header";
  if (url.length > 2048) return "URL longer than 2048 characters";
  if (u.hash) return "URL must not contain a fragment";
  return null;
}

function validate(input: EndpointInput, creating: boolean): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  if (creating && input.url === undefined) problems.push({ path: "/url", message: "url is required" });
  if (input.url !== undefined) {
    const p = endpointUrlProblem(input.url);
    if (p) problems.push({ path: "/url", message: p });
  }
  const headers = input.headers ?? {};
  if (Object.keys(headers).length > MAX_HEADERS)
    problems.push({ path: "/headers", message: `at most ${MAX_HEADERS} headers` });
  for (const [name, value] of Object.entries(headers)) {
    const path = `/headers/${name.replaceAll("~", "~0").replaceAll("/", "~1")}`;
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/.test(name))
      problems.push({ path, message: "not a valid header name (RFC 9110 token)" });
    else if (RESERVED_HEADERS.has(name.toLowerCase()))
      problems.push({ path, message: `${name} is set by the service and cannot be overridden` });
    if (typeof value !== "string" || /[\r\n\0]/.test(value) || value.length > 4096) {
      problems.push({
        path,
        message: "header value must be a string of at most 4096 characters without CR, LF or NUL",
      });
    }
  }
  for (const [i, name] of (input.secret_headers ?? []).entries()) {
    if (
      !Object.keys(headers).some((h) => h.toLowerCase() === name.toLowerCase()) &&
      input.headers !== undefined
    ) {
      problems.push({
        path: `/secret_headers/${i}`,
        message: `${name} is not one of the endpoint's headers`,
      });
    }
  }
  if (
    input.timeout_s !== undefined &&
    (!Number.isInteger(input.timeout_s) || input.timeout_s < 1 || input.timeout_s > MAX_TIMEOUT_S)
  ) {
    problems.push({ path: "/timeout_s", message: `timeout_s must be an integer from 1 to ${MAX_TIMEOUT_S}` });
  }
  return problems;
}

function isSecret(name: string, secretHeaders: string[]): boolean {
  const n = name.toLowerCase();
  return ALWAYS_SECRET.includes(n) || secretHeaders.includes(n);
}

type Row = typeof endpoints.$inferSelect;

function view(ctx: AppContext, row: Row): EndpointView {
  const headers: Record<string, string> = {};
  for (const [name, sealed] of Object.entries(row.headersSealed)) {
    headers[name] = isSecret(name, row.secretHeaders) ? MASK : ctx.box.open(sealed);
  }
  return {
    id: row.id,
    url: row.url,
    headers,
    secret_headers: row.secretHeaders,
    timeout_s: row.timeoutS,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

/** Plain header values for delivery, plus the names to mask in captures. */
export function endpointSecrets(
  ctx: AppContext,
  row: Row,
): { headers: Record<string, string>; secretNames: string[] } {
  const headers: Record<string, string> = {};
  for (const [name, sealed] of Object.entries(row.headersSealed)) headers[name] = ctx.box.open(sealed);
  return { headers, secretNames: [...ALWAYS_SECRET, ...row.secretHeaders] };
}

function seal(ctx: AppContext, headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, ctx.box.seal(v)]));
}

export async function findEndpointRow(ctx: AppContext, projectId: string, id: string): Promise<Row> {
  const [row] = await ctx.database.db
    .select()
    .from(endpoints)
    .where(and(eq(endpoints.projectId, projectId), eq(endpoints.id, id), isNull(endpoints.deletedAt)));
  if (!row) throw new AppError("endpoints.not_found", "endpoint not found");
  return row;
}

export async function createEndpoint(
  ctx: AppContext,
  projectId: string,
  input: EndpointInput,
): Promise<EndpointView> {
  const problems = validate(input, true);
  if (problems.length) throw new AppError("request.invalid", "the endpoint is invalid", problems);
  const now = ctx.clock.now();
  const [row] = await ctx.database.db
    .insert(endpoints)
    .values({
      id: newId("ep"),
      projectId,
      url: input.url as string,
      headersSealed: seal(ctx, input.headers ?? {}),
      secretHeaders: (input.secret_headers ?? []).map((h) => h.toLowerCase()),
      timeoutS: input.timeout_s ?? DEFAULT_TIMEOUT_S,
      createdAt: now,
      updatedAt: now,
    })
    .returning();
  if (!row) throw new AppError("internal", "endpoint was not created");
  return view(ctx, row);
}

export async function listEndpoints(ctx: AppContext, projectId: string): Promise<EndpointView[]> {
  const rows = await ctx.database.db
    .select()
    .from(endpoints)
    .where(and(eq(endpoints.projectId, projectId), isNull(endpoints.deletedAt)))
    .orderBy(asc(endpoints.createdAt));
  return rows.map((r) => view(ctx, r));
}

export async function getEndpoint(ctx: AppContext, projectId: string, id: string): Promise<EndpointView> {
  return view(ctx, await findEndpointRow(ctx, projectId, id));
}

export async function updateEndpoint(
  ctx: AppContext,
  projectId: string,
  id: string,
  input: EndpointInput,
): Promise<EndpointView> {
  const current = await findEndpointRow(ctx, projectId, id);
  const problems = validate(input, false);
  if (problems.length) throw new AppError("request.invalid", "the endpoint is invalid", problems);
  const [row] = await ctx.database.db
    .update(endpoints)
    .set({
      ...(input.url !== undefined ? { url: input.url } : {}),
      ...(input.headers !== undefined ? { headersSealed: seal(ctx, input.headers) } : {}),
      ...(input.secret_headers !== undefined
        ? { secretHeaders: input.secret_headers.map((h) => h.toLowerCase()) }
        : {}),
      ...(input.timeout_s !== undefined ? { timeoutS: input.timeout_s } : {}),
      updatedAt: ctx.clock.now(),
    })
    .where(eq(endpoints.id, current.id))
    .returning();
  return view(ctx, row ?? current);
}

/** Soft-deletes an endpoint; refused while a route still points at it. */
export async function deleteEndpoint(ctx: AppContext, projectId: string, id: string): Promise<void> {
  const current = await findEndpointRow(ctx, projectId, id);
  const [user] = await ctx.database.db
    .select({ id: routes.id })
    .from(routes)
    .where(and(eq(routes.endpointId, current.id), isNull(routes.deletedAt)))
    .limit(1);
  if (user)
    throw new AppError(
      "endpoints.in_use",
      `endpoint is used by route ${user.id}; change or delete the route first`,
    );
  await ctx.database.db
    .update(endpoints)
    .set({ deletedAt: ctx.clock.now() })
    .where(eq(endpoints.id, current.id));
}
