/**
 * The reads of one ingest, in one round trip (they are independent and on the hot path): the
 * project's used storage, a stored duplicate (docs/ingest.md), and the project's enabled routes; the
 * per-process cache of recent lookups (`ctx.ingest.lookups`); and route matching over them.
 */
import { asc, eq, type SQL, sql } from "drizzle-orm";
import type { AppContext, EnabledRoute, ProjectLookup, ProjectLookupCache } from "../context.ts";
import type { Db } from "../db/client.ts";
import { type EventStatus, events, type RouteSnapshot } from "../db/schema/index.ts";
import { AppError } from "../lib/errors.ts";
import type { Envelope, NormalizedMessage } from "../lib/message.ts";
import { compileRule } from "../routing/rules.ts";

/**
 * The project's enabled routes as one jsonb array, oldest first. The lookup reads it and the store
 * statement re-evaluates it (same expression) to check that the routes matched are still current.
 */
export function enabledRoutesJson(projectId: SQL): SQL {
  return sql`coalesce((select jsonb_agg(jsonb_build_object('id', r.id, 'name', r.name, 'rule', r.rule,
          'pipeline', r.pipeline, 'pipeline_text', r.pipeline_text, 'kid', r.signing_secret_kid,
          'endpoint_id', r.endpoint_id, 'attachment_policy', r.attachment_policy,
          'endpoint_url', e.url) order by r.created_at, r.id)
        from routes r join endpoints e on e.id = r.endpoint_id
        where r.project_id = ${projectId} and r.enabled and r.deleted_at is null), '[]'::jsonb)`;
}

/** The project's lookup in one query; throws `projects.not_found` when the project is gone. */
export async function loadProjectLookup(
  ctx: AppContext,
  projectId: string,
  messageId: string,
  rawSha256: string,
): Promise<ProjectLookup> {
  const [row] = await ctx.database.rows<{
    used: number | string;
    duplicate_pk: string | null;
    routes_json: string;
    intake_policy: string | null;
  }>(
    sql`
    select p.storage_bytes::float8 as used,
      (select m.id from messages m
        where m.project_id = p.id and m.message_id = ${messageId} and m.raw_sha256 = ${rawSha256}) as duplicate_pk,
      ${enabledRoutesJson(sql`p.id`)}::text as routes_json, p.intake_policy::text as intake_policy
    from projects p where p.id = ${projectId}`,
  );
  if (!row) throw new AppError("projects.not_found", "project not found");
  return {
    usedBytes: Number(row.used),
    duplicatePk: row.duplicate_pk,
    routes: JSON.parse(row.routes_json) as EnabledRoute[],
    routesJson: row.routes_json,
    intakePolicy: row.intake_policy === null ? null : JSON.parse(row.intake_policy),
  };
}

/** How long a project's lookup is reused without reading it again (see {@link RecentProjectLookups}). */
export const LOOKUP_TTL_MS = 5_000;
/** Projects remembered at most; beyond that the cache starts over. */
const LOOKUPS_MAX = 10_000;

/**
 * Recent lookups per project (one per process, `ctx.ingest.lookups`), so a steady stream of mail costs
 * one round trip per message (the store statement) instead of two. Safe because nothing decided from a
 * cached lookup is final:
 * - routes: the store statement compares the current routes with `routesJson` and inserts nothing
 *   when they differ; the caller reloads, re-matches and retries. Events therefore always come from
 *   routes as current as with a lookup just before the write;
 * - duplicates: the store statement checks for the same raw message itself (and the unique index
 *   still settles races);
 * - quota: `usedBytes` only drives the pre-check that spares blob writes; the guarded update in the
 *   store statement enforces the quota. A cached lookup that says "over quota" is re-read before a
 *   message is refused.
 * A lookup is kept without its `duplicatePk`: a duplicate belongs to one message, not to the project.
 */
export class RecentProjectLookups implements ProjectLookupCache {
  readonly #entries = new Map<string, { lookup: ProjectLookup; until: number }>();

  get(projectId: string, now: number): ProjectLookup | null {
    const hit = this.#entries.get(projectId);
    if (!hit) return null;
    if (hit.until > now) return hit.lookup;
    this.#entries.delete(projectId);
    return null;
  }

  set(projectId: string, lookup: ProjectLookup, now: number): void {
    if (this.#entries.size >= LOOKUPS_MAX) this.#entries.clear();
    this.#entries.set(projectId, {
      lookup: { ...lookup, duplicatePk: null },
      until: now + LOOKUP_TTL_MS,
    });
  }

  /** Keeps the entry's expiry; records the project's usage as the store statement returned it. */
  updateUsage(projectId: string, usedBytes: number): void {
    const hit = this.#entries.get(projectId);
    if (hit) hit.lookup = { ...hit.lookup, usedBytes };
  }

  delete(projectId: string): void {
    this.#entries.delete(projectId);
  }
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
  rows: readonly EnabledRoute[],
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
      pipeline_text: r.pipeline_text,
    });
  }
  return matched;
}
