/**
 * Sends a queued notification (resources/notifications.ts; docs/delivery.md, "Notifications"): a
 * claimed `notification` job is POSTed to the project's notification endpoint, signed like a delivery
 * (both schemes, `webhook-id` = the notification id) with the project's notification secret, through
 * the same SSRF-guarded dispatch. The endpoint and secret are read at send time, so a fixed setting
 * helps a notification already queued.
 *
 * Its own small retry budget: {@link NOTIFICATION_ATTEMPTS} attempts over about ten minutes, then the
 * job is kept as `failed` with its `last_error` and given up. Nothing here touches events or the
 * endpoint's circuit, so a failing notification endpoint never affects deliveries. A notification
 * whose project turned notifications off, or dropped the type, is dropped unsent.
 */
import { and, eq, isNull, sql } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import { endpoints, projects, signingSecrets } from "../db/schema/index.ts";
import { signatureHeaders } from "../lib/signing.ts";
import { endpointSecrets, RESERVED_HEADERS } from "../resources/endpoints.ts";
import { openSigningSecret } from "../resources/signing-secrets.ts";
import type { ClaimedJob } from "./claim.ts";
import { USER_AGENT } from "./deliver.ts";
import { sendWebhook } from "./dispatch.ts";
import { describeFailure } from "./outcome.ts";
import { classifyOutcome } from "./retry-policy.ts";

/** Delays before attempts 2..5 of one notification: about ten minutes in all. */
export const NOTIFICATION_RETRY_MS = [30_000, 60_000, 3 * 60_000, 6 * 60_000] as const;
/** Attempts of one notification before it is given up. */
export const NOTIFICATION_ATTEMPTS = NOTIFICATION_RETRY_MS.length + 1;

/** How one run of a notification job ended. */
export type NotificationRun = "sent" | "retry" | "given_up" | "dropped";

/** Runs a claimed `notification` job once; see the module comment. */
export async function runNotificationJob(
  ctx: AppContext,
  job: ClaimedJob,
  owner: string,
): Promise<NotificationRun> {
  const db = ctx.database;
  const type = typeof job.payload.type === "string" ? job.payload.type : "";
  const [project] = await db.db
    .select({ notifications: projects.notifications })
    .from(projects)
    .where(eq(projects.id, job.projectId));
  const settings = project?.notifications;
  if (!settings?.types.includes(type)) {
    await db.rows(sql`delete from jobs where id = ${job.id} and lease_owner = ${owner} returning id`);
    return "dropped";
  }
  const [endpoint] = await db.db
    .select()
    .from(endpoints)
    .where(
      and(
        eq(endpoints.id, settings.endpoint_id),
        eq(endpoints.projectId, job.projectId),
        isNull(endpoints.deletedAt),
      ),
    );
  const [secret] = await db.db
    .select()
    .from(signingSecrets)
    .where(
      and(
        eq(signingSecrets.kid, settings.signing_secret_kid),
        eq(signingSecrets.projectId, job.projectId),
        isNull(signingSecrets.deletedAt),
      ),
    );
  const body = JSON.stringify(job.payload);
  let error: string | null = null;
  if (!endpoint) error = `endpoint_deleted: notification endpoint ${settings.endpoint_id} no longer exists`;
  else if (!secret)
    error = `signing_secret_deleted: notification secret ${settings.signing_secret_kid} no longer exists`;
  else {
    const headers: Record<string, string> = { "Content-Type": "application/json", "User-Agent": USER_AGENT };
    try {
      Object.assign(
        headers,
        signatureHeaders({
          secret: openSigningSecret(ctx, secret),
          kid: secret.kid,
          body,
          timestampSec: Math.floor(ctx.clock.now().getTime() / 1000),
          idempotencyKey: String(job.payload.id),
        }),
      );
      for (const [name, value] of Object.entries(endpointSecrets(ctx, endpoint).headers)) {
        if (!RESERVED_HEADERS.has(name.toLowerCase())) headers[name] = value;
      }
    } catch {
      error =
        "secret_unreadable: the notification secret or endpoint headers cannot be opened with this SECRETS_KEY";
    }
    if (error === null) {
      const result = await sendWebhook({
        url: endpoint.url,
        headers,
        body,
        timeoutMs: endpoint.timeoutS * 1000,
        allowPrivate: ctx.config.allowPrivateEndpoints,
      });
      if (classifyOutcome({ status: result.status, networkError: result.networkError }) === "success") {
        await db.rows(sql`delete from jobs where id = ${job.id} and lease_owner = ${owner} returning id`);
        return "sent";
      }
      error = describeFailure(result);
    }
  }
  const now = ctx.clock.now();
  const delay = NOTIFICATION_RETRY_MS[job.attempts - 1];
  if (delay === undefined) {
    await db.rows(sql`
      update jobs set status = 'failed', last_error = ${`${error} (gave up after ${job.attempts} attempts)`},
        finished_at = ${now.toISOString()}::timestamptz, lease_owner = null, lease_expires_at = null
      where id = ${job.id} and lease_owner = ${owner}
      returning id`);
    ctx.logger.warn("notification given up", { job_id: job.id, type, error });
    return "given_up";
  }
  await db.rows(sql`
    update jobs set last_error = ${error},
      run_at = ${new Date(now.getTime() + delay).toISOString()}::timestamptz,
      lease_owner = null, lease_expires_at = null
    where id = ${job.id} and lease_owner = ${owner}
    returning id`);
  return "retry";
}
