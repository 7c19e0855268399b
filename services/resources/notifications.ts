/**
 * Operational notifications (docs/delivery.md, "Notifications"): a project may name an endpoint and a
 * signing secret to receive `{id, type, created_at, data}` when something needs an operator's eye — an
 * event given up, an endpoint circuit opening or closing, a message held or rejected by the intake
 * policy, a route gone silent. Set with `PATCH /v1/project`, shown by `GET /v1/project`.
 *
 * A notification is queued as a `notification` job (one row in `jobs`) that is written only when the
 * project has subscribed to the type, so raising one costs an unsubscribed project one indexed read.
 * The delivery worker sends it (delivery/notify.ts). A notification about a state change (an event
 * given up, a circuit opening or closing, a message held) is queued by the very statement that makes
 * the change ({@link notificationJobsInsert}): it exists if and only if the change committed, and the
 * workers are woken after the commit. The insert is a plain `insert … select` of the project row with
 * values built beforehand, so what could make it fail (a lost connection, a full disk) fails the
 * change too, which is then retried as before; a notification never fails a delivery or an intake
 * that would otherwise have succeeded.
 */
import { type Static, Type } from "@sinclair/typebox";
import { and, eq, isNull, type SQL, sql } from "drizzle-orm";
import { type AppContext, WORK_CHANNEL } from "../context.ts";
import type { Database } from "../db/client.ts";
import { endpoints, projects, signingSecrets } from "../db/schema/index.ts";
import { AppError } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import { Nullable } from "../lib/schema.ts";
import type { ValidationIssue } from "../routing/issues.ts";
import { JOBS_NOTIFICATION } from "./replay.ts";

/** Every notification type, in the order the docs list them. */
export const NOTIFICATION_TYPES = [
  "event.dead",
  "endpoint.circuit_opened",
  "endpoint.circuit_closed",
  "message.held",
  "message.rejected",
  "route.silent",
] as const;
/** One of {@link NOTIFICATION_TYPES}. */
export type NotificationType = (typeof NOTIFICATION_TYPES)[number];

/** The project's notification settings as the API shows them; null: notifications are off. */
export const NotificationsViewSchema = Nullable(
  Type.Object({
    endpoint_id: Type.String(),
    signing_secret_kid: Type.String(),
    types: Type.Array(Type.String()),
  }),
);
/** See {@link NotificationsViewSchema}. */
export type NotificationsView = Static<typeof NotificationsViewSchema>;

/** The body POSTed for one notification. */
export const NotificationBodySchema = Type.Object({
  id: Type.String({ description: "ntf_…; also the webhook-id header" }),
  type: Type.Union(NOTIFICATION_TYPES.map((t) => Type.Literal(t))),
  created_at: Type.String({ format: "date-time" }),
  data: Type.Record(Type.String(), Type.Unknown()),
});
/** See {@link NotificationBodySchema}. */
export type NotificationBody = Static<typeof NotificationBodySchema>;

/** The settings of a stored project row. */
export function notificationsOf(stored: NotificationsView | undefined): NotificationsView {
  if (!stored) return null;
  return {
    endpoint_id: stored.endpoint_id,
    signing_secret_kid: stored.signing_secret_kid,
    types: [...stored.types],
  };
}

/** Shape problems of a `notifications` value, with paths under `/notifications`. */
function shapeProblems(value: unknown): ValidationIssue[] {
  const base = "/notifications";
  if (value === null) return [];
  if (typeof value !== "object" || Array.isArray(value))
    return [{ path: base, message: 'must be {"endpoint_id", "signing_secret_kid", "types": [..]} or null' }];
  const issues: ValidationIssue[] = [];
  const v = value as Record<string, unknown>;
  for (const key of Object.keys(v)) {
    if (key !== "endpoint_id" && key !== "signing_secret_kid" && key !== "types")
      issues.push({ path: `${base}/${key}`, message: `unknown key "${key}"` });
  }
  for (const key of ["endpoint_id", "signing_secret_kid"] as const) {
    if (typeof v[key] !== "string" || v[key] === "")
      issues.push({ path: `${base}/${key}`, message: "required: a non-empty string" });
  }
  if (!Array.isArray(v.types) || v.types.length === 0) {
    issues.push({
      path: `${base}/types`,
      message: `required: a non-empty list of ${NOTIFICATION_TYPES.join(", ")}`,
    });
  } else {
    v.types.forEach((type, i) => {
      if (!(NOTIFICATION_TYPES as readonly unknown[]).includes(type))
        issues.push({
          path: `${base}/types/${i}`,
          message: `unknown type ${JSON.stringify(type)} (expected one of ${NOTIFICATION_TYPES.join(", ")})`,
        });
    });
  }
  return issues;
}

/**
 * Replaces the project's notification settings (null turns them off) and returns them. The endpoint
 * and the signing secret must be the project's own and not deleted. Throws
 * `projects.invalid_notifications` with every problem.
 */
export async function setNotifications(
  ctx: AppContext,
  projectId: string,
  value: unknown,
): Promise<NotificationsView> {
  const issues = shapeProblems(value);
  if (issues.length > 0)
    throw new AppError("projects.invalid_notifications", "the notification settings are invalid", issues);
  const db = ctx.database.db;
  let stored: NotificationsView = null;
  if (value !== null) {
    const v = value as { endpoint_id: string; signing_secret_kid: string; types: string[] };
    const [endpoint] = await db
      .select({ id: endpoints.id })
      .from(endpoints)
      .where(
        and(eq(endpoints.id, v.endpoint_id), eq(endpoints.projectId, projectId), isNull(endpoints.deletedAt)),
      );
    const [secret] = await db
      .select({ kid: signingSecrets.kid })
      .from(signingSecrets)
      .where(
        and(
          eq(signingSecrets.kid, v.signing_secret_kid),
          eq(signingSecrets.projectId, projectId),
          isNull(signingSecrets.deletedAt),
        ),
      );
    const refs: ValidationIssue[] = [];
    if (!endpoint)
      refs.push({
        path: "/notifications/endpoint_id",
        message: `no endpoint ${v.endpoint_id} in this project`,
      });
    if (!secret)
      refs.push({
        path: "/notifications/signing_secret_kid",
        message: `no signing secret ${v.signing_secret_kid} in this project`,
      });
    if (refs.length > 0)
      throw new AppError("projects.invalid_notifications", "the notification settings are invalid", refs);
    stored = {
      endpoint_id: v.endpoint_id,
      signing_secret_kid: v.signing_secret_kid,
      types: [...new Set(v.types)],
    };
  }
  const updated = await db
    .update(projects)
    .set({ notifications: stored })
    .where(eq(projects.id, projectId))
    .returning({ id: projects.id });
  if (updated.length === 0) throw new AppError("projects.not_found", "project not found");
  return stored;
}

/** A notification given up (kept as a `failed` job until the job retention sweeps it). */
export interface FailedNotification {
  id: string;
  type: string;
  last_error: string | null;
  finished_at: string | null;
}

/** The project's notifications given up most recently, newest first (at most `limit`). */
export async function listFailedNotifications(
  ctx: AppContext,
  projectId: string,
  limit = 20,
): Promise<FailedNotification[]> {
  const rows = await ctx.database.rows<{
    id: unknown;
    type: unknown;
    last_error: string | null;
    finished_at: string | Date | null;
  }>(sql`
    select payload ->> 'id' as id, payload ->> 'type' as type, last_error, finished_at from jobs
    where project_id = ${projectId} and kind = 'notification' and status = 'failed'
    order by finished_at desc nulls last, id desc limit ${limit}`);
  return rows.map((r) => ({
    id: String(r.id ?? ""),
    type: String(r.type ?? ""),
    last_error: r.last_error,
    finished_at: r.finished_at === null ? null : new Date(r.finished_at).toISOString(),
  }));
}

/** Something that runs a statement: the database, or an open transaction. */
export interface StatementRunner {
  rows<T = Record<string, unknown>>(query: SQL): Promise<T[]>;
}

/** A notification made ready for a statement that also makes its cause: the job's id and its body. */
export interface PendingNotification {
  job_id: string;
  project_id: string;
  body: NotificationBody;
}

/** The notification of `type` about `data`, raised at `now`, ready to queue. */
export function pendingNotification(input: {
  projectId: string;
  type: NotificationType;
  data: Record<string, unknown>;
  now: Date;
}): PendingNotification {
  const body: NotificationBody = {
    id: newId("ntf"),
    type: input.type,
    created_at: input.now.toISOString(),
    data: input.data,
  };
  return { job_id: newId("job"), project_id: input.projectId, body };
}

/**
 * The `insert into jobs` of the notifications `source` yields — rows of (job id, project id, body
 * jsonb), the body as {@link NotificationBody} — keeping only those whose project subscribes to the
 * body's type. Meant as a data-modifying CTE of the statement that makes the notification's cause, so
 * the notification is queued if and only if that change commits. It returns the queued jobs' `id` and
 * `payload`. It takes no parameters of its own, so it fits a statement prepared once.
 */
export function notificationJobsInsert(source: SQL): SQL {
  return sql`insert into jobs (id, kind, project_id, payload, run_at, attempts, created_at)
    select n.job_id, 'notification', p.id, n.body, (n.body ->> 'created_at')::timestamptz, 0,
      (n.body ->> 'created_at')::timestamptz
    from (${source}) as n(job_id, project_id, body) join projects p on p.id = n.project_id
    where p.notifications is not null and p.notifications -> 'types' @> jsonb_build_array(n.body ->> 'type')
    returning id, payload`;
}

/**
 * Wakes the workers for notifications queued by a statement that committed; never throws (a lost
 * wake-up only delays the notification until the workers' next poll).
 */
export async function wakeForNotifications(database: Database): Promise<void> {
  await database.notify(WORK_CHANNEL, JOBS_NOTIFICATION).catch(() => {});
}

/**
 * Queues one notification when the project subscribes to its type; returns its id, or null when not
 * subscribed. Throws on a database error (use {@link raiseNotification} where that must not matter).
 */
export async function queueNotification(
  runner: StatementRunner,
  input: { projectId: string; type: NotificationType; data: Record<string, unknown>; now: Date },
): Promise<string | null> {
  const n = pendingNotification(input);
  const rows = await runner.rows<{ id: string }>(
    notificationJobsInsert(
      sql`select ${n.job_id}::text, ${n.project_id}::text, ${JSON.stringify(n.body)}::jsonb`,
    ),
  );
  return rows.length > 0 ? n.body.id : null;
}

/**
 * Queues a notification and wakes the workers; never throws (a failure is logged). Returns the
 * notification id, or null when none was queued. For a notification whose cause is a state change
 * that can be lost, queue it in the statement making the change instead ({@link notificationJobsInsert}):
 * this one is for causes that leave nothing behind (a refused message).
 */
export async function raiseNotification(
  ctx: AppContext,
  input: { projectId: string; type: NotificationType; data: Record<string, unknown> },
): Promise<string | null> {
  try {
    const id = await queueNotification(ctx.database, { ...input, now: ctx.clock.now() });
    if (id !== null) await ctx.database.notify(WORK_CHANNEL, JOBS_NOTIFICATION);
    return id;
  } catch (err) {
    ctx.logger.error("queueing a notification failed", {
      project_id: input.projectId,
      type: input.type,
      error: String(err),
    });
    return null;
  }
}
