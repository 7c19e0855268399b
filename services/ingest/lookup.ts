/**
 * The reads of one ingest, in one round trip (they are independent and on the hot path): the
 * project's used storage, a stored duplicate (contract §3), and the project's enabled routes; plus
 * route matching over them.
 */
import { asc, eq, sql } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import type { Db } from "../db/client.ts";
import { type EventStatus, events, type RouteSnapshot } from "../db/schema/index.ts";
import { AppError } from "../lib/errors.ts";
import type { Envelope, NormalizedMessage } from "../lib/message.ts";
import { compileRule } from "../routing/rules.ts";
import { preparedRows } from "./prepared.ts";

/** An enabled, non-deleted route of the project with its endpoint URL. */
export interface RouteRow {
  id: string;
  name: string;
  rule: unknown;
  pipeline: RouteSnapshot["pipeline"];
  kid: string;
  endpoint_id: string;
  endpoint_url: string;
}

/** What ingest needs to know about the project before storing a message. */
export interface IntakeState {
  usedBytes: number;
  /** `messages.id` of the same raw message already stored in the project, or null */
  duplicatePk: string | null;
  /** oldest route first */
  routes: RouteRow[];
}

/** One query; throws `projects.not_found` when the project is gone. */
export async function loadIntakeState(
  ctx: AppContext,
  projectId: string,
  messageId: string,
  rawSha256: string,
): Promise<IntakeState> {
  const [row] = await preparedRows<{
    used: number | string;
    duplicate_pk: string | null;
    routes: unknown;
  }>(
    ctx.database,
    sql`
    select p.storage_bytes::float8 as used,
      (select m.id from messages m
        where m.project_id = p.id and m.message_id = ${messageId} and m.raw_sha256 = ${rawSha256}) as duplicate_pk,
      coalesce((select jsonb_agg(jsonb_build_object('id', r.id, 'name', r.name, 'rule', r.rule,
          'pipeline', r.pipeline, 'kid', r.signing_secret_kid, 'endpoint_id', r.endpoint_id,
          'endpoint_url', e.url) order by r.created_at, r.id)
        from routes r join endpoints e on e.id = r.endpoint_id
        where r.project_id = p.id and r.enabled and r.deleted_at is null), '[]'::jsonb) as routes
    from projects p where p.id = ${projectId}`,
  );
  if (!row) throw new AppError("projects.not_found", "project not found");
  // Drivers differ: postgres.js may hand jsonb back as text when it comes out of a function.
  const routes = typeof row.routes === "string" ? JSON.parse(row.routes) : row.routes;
  return { usedBytes: Number(row.used), duplicatePk: row.duplicate_pk, routes: routes as RouteRow[] };
}

/** The events of a stored message, in creation order (the duplicate answer). */
export async function eventsOfMessage(
  db: Pick<Db, "select">,
  messagePk: string,
): Promise<{ id: string; route_id: string; status: EventStatus }[]> {
  return db
    .select({ id: events.id, route_id: events.routeId, status: events.status })
    .from(events)
    .where(eq(events.messagePk, messagePk))
    .orderBy(asc(events.createdAt), asc(events.id));
}

/**
 * The routes whose rule matches, as route snapshots. A stored rule that no longer compiles (the rule
 * language changed since it was saved) skips that route with a warning; it never fails the message.
 */
export function matchRoutes(
  ctx: AppContext,
  rows: readonly RouteRow[],
  message: NormalizedMessage,
  envelope: Envelope | null,
): RouteSnapshot[] {
  const matched: RouteSnapshot[] = [];
  for (const r of rows) {
    let matches: boolean;
    try {
      matches = compileRule(r.rule)(message, envelope ?? undefined);
    } catch (err) {
      ctx.logger.warn("route skipped: its stored rule does not compile", { route_id: r.id, err });
      continue;
    }
    if (!matches) continue;
    matched.push({
      route_id: r.id,
      name: r.name,
      endpoint_id: r.endpoint_id,
      endpoint_url: r.endpoint_url,
      kid: r.kid,
      pipeline: r.pipeline,
    });
  }
  return matched;
}
