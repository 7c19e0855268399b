/**
 * Retention (`RETENTION_DAYS`, default 30; docs/attachments.md): messages received before `now - RETENTION_DAYS` are
 * deleted with everything hanging off them (attachment rows, events, attempts, download tokens — all
 * `on delete cascade`), the project's `storage_bytes` is decremented by each message's `stored_bytes`
 * (the amount ingest added for it), and blobs that no remaining message or attachment references are
 * deleted from the store. Expired download tokens are deleted after a grace period, and jobs that ended
 * (`done` or `failed`) after `JOB_RETENTION_DAYS` (default 7).
 *
 * Blobs are content-addressed and shared across messages and projects, so a blob is deleted only when
 * (a) its last referencing row vanished in this sweep, and (b) a re-check right before the deletion
 * finds no reference, made under an exclusive transaction-level advisory lock on the key. Ingest may
 * re-store the same content at any moment: its `put` is a no-op while the blob exists, and its rows
 * commit later. The lock protocol lives in `blob-locks.ts`; `lockBlobKeysShared` is its other half: an
 * ingest transaction that takes it, then checks (`stat`) and if needed re-puts its blobs before inserting rows, can never end
 * up referencing a deleted blob. Without it the remaining window is the few milliseconds between the
 * sweeper's re-check and its delete, for content that was unreferenced a moment before — documented in
 * docs/attachments.md.
 */
import { sql } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import type { Db } from "../db/client.ts";
import { lockBlobKeys } from "./blob-locks.ts";

/** Messages deleted per statement; each batch is its own short transaction. */
const MESSAGE_BATCH = 500;
/** Blob keys re-checked and deleted per transaction. */
const BLOB_BATCH = 100;
/**
 * Expired tokens are kept this long so a late request still gets 410 `attachments.expired` (docs/attachments.md)
 * rather than 404; the longest lifetime is 1 day, so a row lives at most 8 days.
 */
export const EXPIRED_TOKEN_GRACE_MS = 7 * 24 * 3600 * 1000;
const DAY_MS = 24 * 3600 * 1000;

type Executor = Pick<Db, "execute">;

/** What one sweep removed. */
export interface SweepResult {
  messagesDeleted: number;
  bytesReleased: number;
  blobsDeleted: number;
  tokensDeleted: number;
  /** jobs that ended more than `JOB_RETENTION_DAYS` ago (see {@link sweepRetention}) */
  jobsDeleted: number;
}

/** Rows of a raw statement, whichever driver ran it (postgres.js: array; PGlite: `{rows}`). */
async function run<T>(db: Executor, query: ReturnType<typeof sql>): Promise<T[]> {
  const r = (await db.execute(query)) as unknown;
  return Array.isArray(r) ? (r as T[]) : ((r as { rows: T[] }).rows ?? []);
}

/** Deletes one batch of expired messages; returns the blob keys they referenced and bytes released. */
async function deleteMessageBatch(ctx: AppContext, cutoff: Date) {
  // Data-modifying CTEs all run to completion against one snapshot; `att` reads the attachment rows
  // before the cascade removes them. SKIP LOCKED lets several serve processes sweep side by side.
  // `key` is null for a message whose raw bytes were kept in its row (ingest/raw.ts): no blob to free.
  const rows = await run<{ kind: "raw" | "att"; key: string | null; bytes: number; project_id: string }>(
    ctx.database.db,
    sql`
      with doomed as (
        select id from messages where received_at < ${cutoff.toISOString()}::timestamptz
        order by received_at limit ${MESSAGE_BATCH} for update skip locked
      ), att as (
        select distinct a.blob_key from attachments a join doomed d on a.message_pk = d.id
        union
        -- webhook bodies kept in the blob store (delivery/body-store.ts), read before the cascade too
        select e.body_blob_key from events e join doomed d on e.message_pk = d.id where e.body_blob_key is not null
      ), gone as (
        delete from messages m using doomed d where m.id = d.id
        returning m.project_id, m.stored_bytes, m.raw_blob_key, m.text_blob_key, m.html_blob_key
      ), released as (
        update projects p set storage_bytes = greatest(0, p.storage_bytes - s.bytes)
        from (select project_id, sum(stored_bytes) as bytes from gone group by project_id) s
        where p.id = s.project_id
        returning p.id
      )
      select 'raw' as kind, raw_blob_key as key, stored_bytes::float8 as bytes, project_id from gone
      union all
      select 'att', blob_key, 0, '' from att
      union all
      -- the blobs of bodies too large for the stored model (body-blobs.ts)
      select 'att', k, 0, '' from gone, unnest(array[text_blob_key, html_blob_key]) as b(k) where k is not null`,
  );
  const raw = rows.filter((r) => r.kind === "raw");
  return {
    messages: raw.length,
    bytes: raw.reduce((n, r) => n + Number(r.bytes), 0),
    keys: rows.flatMap((r) => (r.key === null ? [] : [r.key])),
  };
}

/** Deletes those of `keys` that nothing references any more; returns how many were deleted (also used by erasure). */
export async function deleteUnreferencedBlobs(ctx: AppContext, keys: readonly string[]): Promise<number> {
  let deleted = 0;
  const unique = [...new Set(keys)];
  for (let i = 0; i < unique.length; i += BLOB_BATCH) {
    const batch = unique.slice(i, i + BLOB_BATCH);
    deleted += await ctx.database.db.transaction(async (tx) => {
      await lockBlobKeys(tx, batch, "exclusive");
      const values = sql.join(
        batch.map((k) => sql`(${k})`),
        sql`, `,
      );
      const orphans = await run<{ key: string }>(
        tx,
        sql`select v.key from (values ${values}) as v(key)
            where not exists (select 1 from attachments a where a.blob_key = v.key)
              and not exists (select 1 from messages m where m.raw_blob_key = v.key)
              and not exists (select 1 from messages m where m.text_blob_key = v.key)
              and not exists (select 1 from messages m where m.html_blob_key = v.key)
              and not exists (select 1 from events e where e.body_blob_key = v.key)`,
      );
      // Deleted while the lock is held: a cooperating ingest waits, then sees the blob gone and re-puts.
      for (const { key } of orphans) await ctx.blobs.delete(key);
      return orphans.length;
    });
  }
  return deleted;
}

/**
 * One retention pass at `now`: expired messages (in batches), their blobs once unreferenced, download
 * tokens expired more than {@link EXPIRED_TOKEN_GRACE_MS} ago, and jobs that ended more than
 * `JOB_RETENTION_DAYS` ago. Safe to run concurrently in several
 * processes. A blob whose deletion fails stays stored (and unreferenced); it is logged, not retried.
 */
export async function sweepRetention(ctx: AppContext, opts: { now?: Date } = {}): Promise<SweepResult> {
  const now = opts.now ?? ctx.clock.now();
  const cutoff = new Date(now.getTime() - ctx.config.retentionDays * DAY_MS);
  const result: SweepResult = {
    messagesDeleted: 0,
    bytesReleased: 0,
    blobsDeleted: 0,
    tokensDeleted: 0,
    jobsDeleted: 0,
  };
  for (;;) {
    const batch = await deleteMessageBatch(ctx, cutoff);
    result.messagesDeleted += batch.messages;
    result.bytesReleased += batch.bytes;
    try {
      result.blobsDeleted += await deleteUnreferencedBlobs(ctx, batch.keys);
    } catch (err) {
      ctx.logger.error("retention: blob deletion failed", { err });
    }
    if (batch.messages < MESSAGE_BATCH) break;
  }
  // Events of erased messages (message_pk null) outlive their message; they leave when it would have.
  await run(
    ctx.database.db,
    sql`delete from events where message_pk is null and created_at < ${cutoff.toISOString()}::timestamptz`,
  );
  const tokenCutoff = new Date(now.getTime() - EXPIRED_TOKEN_GRACE_MS);
  const tokens = await run<{ n: number }>(
    ctx.database.db,
    sql`with d as (delete from download_tokens where expires_at < ${tokenCutoff.toISOString()}::timestamptz
        returning 1) select count(*)::int as n from d`,
  );
  result.tokensDeleted = Number(tokens[0]?.n ?? 0);
  // Jobs that ended — a bulk replay done or failed (its progress shown by `GET /v1/jobs/{id}` until
  // then), a notification given up (kept `failed` with its last error) — leave after the job window.
  // Jobs still queued or running are never touched, however old: a bulk replay whose worker died is
  // resumed by another once its lease expires.
  const jobCutoff = new Date(now.getTime() - ctx.config.jobRetentionDays * DAY_MS);
  const jobs = await run<{ n: number }>(
    ctx.database.db,
    sql`with d as (delete from jobs where status in ('done', 'failed')
        and coalesce(finished_at, created_at) < ${jobCutoff.toISOString()}::timestamptz
        returning 1) select count(*)::int as n from d`,
  );
  result.jobsDeleted = Number(jobs[0]?.n ?? 0);
  // Dashboard sign-outs recorded past their session's own end (ui/revocation.ts) protect nothing.
  await run(
    ctx.database.db,
    sql`delete from ui_revoked_sessions where expires_at < ${now.toISOString()}::timestamptz`,
  );
  return result;
}

/** Runs {@link sweepRetention} now and then every `intervalMs` until `stop()`; errors are logged. */
export function startRetentionSweeper(
  ctx: AppContext,
  opts: { intervalMs: number },
): { stop(): Promise<void> } {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> = Promise.resolve();
  const tick = () => {
    running = sweepRetention(ctx)
      .then((r) => {
        if (r.messagesDeleted + r.blobsDeleted + r.tokensDeleted + r.jobsDeleted > 0)
          ctx.logger.info("retention sweep", { ...r });
      })
      .catch((err: unknown) => ctx.logger.error("retention sweep failed", { err }))
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, opts.intervalMs);
        timer?.unref?.();
      });
  };
  tick();
  return {
    async stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      await running;
    },
  };
}

/** A project's accounted storage and its quota (`PROJECT_QUOTA_BYTES`), in bytes. */
export async function projectStorageUsage(
  ctx: AppContext,
  projectId: string,
): Promise<{ used_bytes: number; quota_bytes: number } | null> {
  const [row] = await run<{ used: number }>(
    ctx.database.db,
    sql`select storage_bytes::float8 as used from projects where id = ${projectId}`,
  );
  return row ? { used_bytes: Number(row.used), quota_bytes: ctx.config.projectQuotaBytes } : null;
}
