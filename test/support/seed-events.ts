/**
 * Seeding for delivery tests: a project with an endpoint, a signing secret and a route (through the
 * real API), and messages + due events inserted directly (delivery tests do not depend on ingest, and
 * the multi-worker test needs thousands of events fast).
 */
import { eq, sql } from "drizzle-orm";
import type { AppContext } from "../../services/context.ts";
import { endpoints, events, messages, routes } from "../../services/db/schema/index.ts";
import { newId } from "../../services/lib/ids.ts";
import type { NormalizedMessage } from "../../services/lib/message.ts";
import { idempotencyKey } from "../../services/lib/signing.ts";
import { snapshotRoute } from "../../services/resources/replay.ts";
import type { TestApp } from "./app.ts";
import { eventually } from "./eventually.ts";
import { sampleMessage } from "./messages.ts";

export interface SeededRoute {
  projectId: string;
  apiKey: string;
  endpointId: string;
  routeId: string;
  kid: string;
  /** the whsec_ secret, for receivers verifying signatures */
  secret: string;
}

export interface SeedRouteOptions {
  url: string;
  pipeline?: unknown;
  headers?: Record<string, string>;
  secretHeaders?: string[];
  timeoutS?: number;
  /** reuse a project instead of creating one */
  project?: { id: string; apiKey: string };
}

async function ok<T = any>(app: TestApp, method: string, path: string, apiKey: string, body?: unknown) {
  const r = await app.request<T>(method, path, { apiKey, ...(body !== undefined ? { body } : {}) });
  if (r.status >= 300) throw new Error(`${method} ${path} → ${r.status} ${r.text}`);
  return r.body;
}

/** Creates (or reuses) a project, then an endpoint, a signing secret and a route to `url`. */
export async function seedRoute(app: TestApp, opts: SeedRouteOptions): Promise<SeededRoute> {
  const project = opts.project ?? (await app.newProject());
  const key = project.apiKey;
  const ep = await ok(app, "POST", "/v1/endpoints", key, {
    url: opts.url,
    ...(opts.headers ? { headers: opts.headers } : {}),
    ...(opts.secretHeaders ? { secret_headers: opts.secretHeaders } : {}),
    ...(opts.timeoutS ? { timeout_s: opts.timeoutS } : {}),
  });
  const sk = await ok(app, "POST", "/v1/signing-secrets", key);
  const rt = await ok(app, "POST", "/v1/routes", key, {
    name: "delivery test",
    endpoint_id: ep.id,
    signing_secret_kid: sk.kid,
    rule: {},
    ...(opts.pipeline ? { pipeline: opts.pipeline } : {}),
  });
  return {
    projectId: project.id,
    apiKey: key,
    endpointId: ep.id,
    routeId: rt.id,
    kid: sk.kid,
    secret: sk.secret,
  };
}

export interface SeedEventsOptions {
  count?: number;
  /** due time; default now (the worker picks them up at once) */
  nextAttemptAt?: Date | null;
  message?: (i: number) => NormalizedMessage;
  /** don't notify workers */
  quiet?: boolean;
}

/**
 * Inserts `count` messages and one `pending` event each for `route`, due now. Returns the event ids in
 * creation order. Events are created the way ingest creates them: a snapshot of the route, the
 * deterministic idempotency key, no body.
 */
export async function seedEvents(
  ctx: AppContext,
  seeded: Pick<SeededRoute, "projectId" | "routeId">,
  opts: SeedEventsOptions = {},
): Promise<string[]> {
  const db = ctx.database.db;
  const [route] = await db.select().from(routes).where(eq(routes.id, seeded.routeId));
  if (!route) throw new Error(`no route ${seeded.routeId}`);
  const [endpoint] = await db.select().from(endpoints).where(eq(endpoints.id, route.endpointId));
  if (!endpoint) throw new Error(`no endpoint ${route.endpointId}`);
  const snapshot = snapshotRoute(route, endpoint);
  const count = opts.count ?? 1;
  const now = ctx.clock.now();
  const due = opts.nextAttemptAt === undefined ? now : opts.nextAttemptAt;
  const ids: string[] = [];
  const CHUNK = 500;
  for (let start = 0; start < count; start += CHUNK) {
    const msgRows: (typeof messages.$inferInsert)[] = [];
    const evRows: (typeof events.$inferInsert)[] = [];
    for (let i = start; i < Math.min(count, start + CHUNK); i++) {
      const parsed = opts.message?.(i) ?? sampleMessage(i);
      const pk = newId("msg");
      const id = Bun.randomUUIDv7();
      ids.push(id);
      msgRows.push({
        id: pk,
        projectId: seeded.projectId,
        messageId: parsed.message_id,
        rawSha256: "0".repeat(64),
        rawBlobKey: `seed/${pk}`,
        rawSizeBytes: 1000 + i,
        sourceType: "api",
        envelope: null,
        parsed,
        receivedAt: now,
      });
      evRows.push({
        id,
        projectId: seeded.projectId,
        messagePk: pk,
        routeId: route.id,
        status: "pending",
        nextAttemptAt: due,
        idempotencyKey: idempotencyKey(parsed.message_id, route.id),
        routeSnapshot: snapshot,
        createdAt: now,
        updatedAt: now,
      });
    }
    await db.insert(messages).values(msgRows);
    await db.insert(events).values(evRows);
  }
  if (!opts.quiet) await ctx.wakeWorkers();
  return ids;
}

/** Polls the event until `check` holds; returns the row (the last one read is printed on timeout). */
export function waitForEvent(
  ctx: AppContext,
  id: string,
  check: (e: typeof events.$inferSelect) => boolean,
  timeoutMs = 10_000,
): Promise<typeof events.$inferSelect> {
  return eventually(
    `event ${id} to reach the expected state`,
    async () => (await ctx.database.db.select().from(events).where(eq(events.id, id)))[0],
    timeoutMs,
    { until: (e) => e !== undefined && check(e) },
  );
}

/** Terminal or waiting for a retry that is not due soon. */
export const isSettled = (e: { status: string }) => ["delivered", "dead", "discarded"].includes(e.status);

/** An event's status, its webhook body kept in the blob store (key, size) and its message's and project's usage. */
export async function eventStorage(ctx: AppContext, eventId: string) {
  const [row] = await ctx.database.rows<{
    status: string;
    attempts: number;
    key: string | null;
    size: number | null;
    stored: number;
    used: number;
  }>(sql`
    select e.status, e.attempts, e.body_blob_key as key, e.body_blob_size::float8 as size,
      m.stored_bytes::float8 as stored, p.storage_bytes::float8 as used
    from events e join messages m on m.id = e.message_pk join projects p on p.id = e.project_id
    where e.id = ${eventId}::uuid`);
  if (!row) throw new Error(`event ${eventId} not found`);
  return {
    ...row,
    size: row.size === null ? null : Number(row.size),
    stored: Number(row.stored),
    used: Number(row.used),
  };
}
