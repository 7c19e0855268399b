/**
 * Webhook endpoints: URL (http/https, no userinfo), custom headers (sealed at rest; values of secret
 * headers are masked in every response and capture), a per-attempt timeout, the delivery limits
 * (`rate_limit_per_s`, `max_in_flight`), the manual `paused` switch and the read-only `circuit`
 * (delivery/gate.ts, delivery/circuit.ts). Unless `ALLOW_PRIVATE_ENDPOINTS`, a URL whose host is a
 * loopback, private or otherwise refused address literal, or a `localhost` name, is refused here; other
 * names are checked where they are dialled (lib/ssrf.ts), since what a name resolves to can change.
 */
import { type Static, Type } from "@sinclair/typebox";
import { and, asc, eq, isNull, sql } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import { endpoints, routes } from "../db/schema/index.ts";
import { AppError, type ErrorDetail } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import { Integer, Nullable, Timestamp } from "../lib/schema.ts";
import { blockedReason } from "../lib/ssrf.ts";
import { releaseParkedEvents } from "./endpoint-circuit.ts";

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
  rate_limit_per_s?: number | null;
  max_in_flight?: number | null;
  paused?: boolean;
}

/** Highest `rate_limit_per_s` and `max_in_flight` accepted. */
export const MAX_RATE_LIMIT_PER_S = 10_000;
export const MAX_IN_FLIGHT = 10_000;

/** An endpoint's circuit breaker as the API shows it (docs/delivery.md). */
export const CircuitViewSchema = Type.Object({
  state: Type.Union([Type.Literal("closed"), Type.Literal("open"), Type.Literal("half_open")]),
  since: Nullable(Timestamp),
  consecutive_failures: Integer(),
});

/** An endpoint as the API shows it: header values of secret headers are masked. */
export const EndpointViewSchema = Type.Object({
  id: Type.String(),
  url: Type.String(),
  headers: Type.Record(Type.String(), Type.String()),
  secret_headers: Type.Array(Type.String()),
  timeout_s: Integer(),
  rate_limit_per_s: Nullable(Type.Number()),
  max_in_flight: Nullable(Integer()),
  paused: Type.Boolean(),
  circuit: CircuitViewSchema,
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

/**
 * The refused address an endpoint URL names directly (an IP literal in a refused range, or `localhost`
 * and its subdomains), or null. Names are not resolved here.
 */
export function privateAddressOf(url: string): string | null {
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase();
  } catch {
    return null;
  }
  if (host === "localhost" || host.endsWith(".localhost") || host === "localhost.") return host;
  const literal = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  const reason = blockedReason(literal);
  return reason === null || reason === "invalid" ? null : literal;
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
  const rate = input.rate_limit_per_s;
  if (
    rate !== undefined &&
    rate !== null &&
    !(Number.isFinite(rate) && rate > 0 && rate <= MAX_RATE_LIMIT_PER_S)
  ) {
    problems.push({
      path: "/rate_limit_per_s",
      message: `rate_limit_per_s must be a number above 0 and at most ${MAX_RATE_LIMIT_PER_S}, or null (unlimited)`,
    });
  }
  const mif = input.max_in_flight;
  if (mif !== undefined && mif !== null && !(Number.isInteger(mif) && mif >= 1 && mif <= MAX_IN_FLIGHT)) {
    problems.push({
      path: "/max_in_flight",
      message: `max_in_flight must be an integer from 1 to ${MAX_IN_FLIGHT}, or null (unlimited)`,
    });
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
    rate_limit_per_s: row.rateLimitPerS,
    max_in_flight: row.maxInFlight,
    paused: row.paused,
    circuit: circuitView(row),
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

/** The `circuit` object of an endpoint row. */
export function circuitView(row: Pick<Row, "circuitState" | "circuitSince" | "consecutiveFailures">) {
  return {
    state: row.circuitState,
    since: row.circuitSince ? row.circuitSince.toISOString() : null,
    consecutive_failures: row.consecutiveFailures,
  };
}

/** Refuses a loopback/private URL unless `ALLOW_PRIVATE_ENDPOINTS` (see the module comment). */
function checkPrivate(ctx: AppContext, url: string | undefined): void {
  if (url === undefined || ctx.config.allowPrivateEndpoints) return;
  const address = privateAddressOf(url);
  if (address === null) return;
  throw new AppError(
    "endpoints.private_address",
    `${address} is a loopback or private address; webhooks cannot be sent there unless the operator sets ALLOW_PRIVATE_ENDPOINTS=true`,
    [
      {
        path: "/url",
        message: `${address} is a loopback or private address (ALLOW_PRIVATE_ENDPOINTS is off)`,
      },
    ],
  );
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
  checkPrivate(ctx, input.url);
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
      rateLimitPerS: input.rate_limit_per_s ?? null,
      maxInFlight: input.max_in_flight ?? null,
      paused: input.paused ?? false,
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
  checkPrivate(ctx, input.url);
  const [row] = await ctx.database.db
    .update(endpoints)
    .set({
      ...(input.url !== undefined ? { url: input.url } : {}),
      ...(input.headers !== undefined ? { headersSealed: seal(ctx, input.headers) } : {}),
      ...(input.secret_headers !== undefined
        ? { secretHeaders: input.secret_headers.map((h) => h.toLowerCase()) }
        : {}),
      ...(input.timeout_s !== undefined ? { timeoutS: input.timeout_s } : {}),
      // a new rate starts with a full bucket
      ...(input.rate_limit_per_s !== undefined
        ? { rateLimitPerS: input.rate_limit_per_s, rateTokens: null, rateRefilledAt: null }
        : {}),
      ...(input.max_in_flight !== undefined ? { maxInFlight: input.max_in_flight } : {}),
      ...(input.paused !== undefined ? { paused: input.paused } : {}),
      updatedAt: ctx.clock.now(),
    })
    .where(eq(endpoints.id, current.id))
    .returning();
  // Resumed: what waited behind the pause is due now (unless the circuit still holds it).
  if (current.paused && input.paused === false && row?.circuitState === "closed") {
    await releaseParkedEvents(ctx, current.id);
  }
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

/** The window of {@link endpointHealth}. */
export const HEALTH_WINDOW_S = 3600;

/** `GET /v1/endpoints/{id}/health`: the attempt log of the last hour, summarised. */
export const EndpointHealthSchema = Type.Object({
  window_s: Integer(),
  attempts: Integer(),
  successes: Integer(),
  /** successes / attempts, null when there were no attempts in the window */
  success_rate: Nullable(Type.Number()),
  latency_ms: Type.Object({ p50: Nullable(Integer()), p99: Nullable(Integer()) }),
  last_success_at: Nullable(Timestamp),
  last_failure_at: Nullable(Timestamp),
  last_error: Nullable(Type.String()),
  circuit: CircuitViewSchema,
});
/** See {@link EndpointHealthSchema}. */
export type EndpointHealth = Static<typeof EndpointHealthSchema>;

type HealthRow = {
  attempts: number | string;
  successes: number | string;
  p50: number | string | null;
  p99: number | string | null;
  last_success_at: Date | string | null;
  last_failure_at: Date | string | null;
  last_error: string | null;
};

const isoOrNull = (d: Date | string | null): string | null => (d === null ? null : new Date(d).toISOString());

/**
 * Health of the endpoint rows given (one statement for all of them, so the dashboard's endpoints page
 * costs one query): every figure reads `attempts_endpoint_created_idx`, the window and "last" lookups
 * as index range scans.
 */
export async function endpointsHealth(ctx: AppContext, rows: Row[]): Promise<Map<string, EndpointHealth>> {
  const out = new Map<string, EndpointHealth>();
  if (rows.length === 0) return out;
  const since = new Date(ctx.clock.now().getTime() - HEALTH_WINDOW_S * 1000).toISOString();
  const ids = rows.map((r) => r.id);
  const found = await ctx.database.rows<HealthRow & { id: string }>(sql`
    select ep.id, w.attempts, w.successes, w.p50, w.p99,
      (select a.created_at from attempts a where a.endpoint_id = ep.id and a.status = 'success'
        order by a.created_at desc limit 1) as last_success_at,
      lf.created_at as last_failure_at, lf.error as last_error
    from unnest(${`{${ids.map((i) => `"${i.replaceAll('"', "")}"`).join(",")}}`}::text[]) as ep(id)
    cross join lateral (
      select count(*) as attempts, count(*) filter (where a.status = 'success') as successes,
        percentile_disc(0.5) within group (order by a.latency_ms) as p50,
        percentile_disc(0.99) within group (order by a.latency_ms) as p99
      from attempts a where a.endpoint_id = ep.id and a.created_at > ${since}::timestamptz
    ) w
    left join lateral (
      select a.created_at,
        coalesce(a.response_capture->>'network_error',
          'http ' || a.http_status || coalesce(': ' || nullif(left(a.response_capture->>'body_preview', 200), ''), '')) as error
      from attempts a where a.endpoint_id = ep.id and a.status = 'failed'
      order by a.created_at desc limit 1
    ) lf on true`);
  const byId = new Map(rows.map((r) => [r.id, r]));
  for (const f of found) {
    const row = byId.get(f.id);
    if (!row) continue;
    const attempts = Number(f.attempts);
    const successes = Number(f.successes);
    out.set(f.id, {
      window_s: HEALTH_WINDOW_S,
      attempts,
      successes,
      success_rate: attempts === 0 ? null : successes / attempts,
      latency_ms: { p50: f.p50 === null ? null : Number(f.p50), p99: f.p99 === null ? null : Number(f.p99) },
      last_success_at: isoOrNull(f.last_success_at),
      last_failure_at: isoOrNull(f.last_failure_at),
      last_error: f.last_error,
      circuit: circuitView(row),
    });
  }
  return out;
}

/** Health of one endpoint of the project (404 `endpoints.not_found` otherwise). */
export async function endpointHealth(
  ctx: AppContext,
  projectId: string,
  id: string,
): Promise<EndpointHealth> {
  const row = await findEndpointRow(ctx, projectId, id);
  const health = (await endpointsHealth(ctx, [row])).get(row.id);
  if (!health) throw new AppError("internal", "endpoint health could not be read");
  return health;
}

/** The project's endpoint rows (the dashboard reads limits, pause and circuit from them). */
export async function listEndpointRows(ctx: AppContext, projectId: string): Promise<Row[]> {
  return ctx.database.db
    .select()
    .from(endpoints)
    .where(and(eq(endpoints.projectId, projectId), isNull(endpoints.deletedAt)))
    .orderBy(asc(endpoints.createdAt));
}
