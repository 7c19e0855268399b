/**
 * Records attempt results, batching those that finish while a write is in flight into ONE statement
 * (fewer round trips under load; no added latency when idle — the first result is written at once).
 *
 * The statement is a data-modifying CTE: the event update, guarded per row by `lease_owner = owner`,
 * feeds the attempt insert. So for every event in the batch either both the event update and its
 * attempt row happen, or neither does (a worker whose lease was taken over writes nothing), and
 * (event_id, number) stays unique. Each attempt adds the bytes of its captures (the JSON text of
 * `request_capture` and `response_capture`) to its message's `stored_bytes` and its project's
 * `storage_bytes` in the same statement, and so does the body of an event stored by it (its first
 * attempt, or the first after a replay); ingest/quota.ts says what counts. An attempt that ends after
 * its message was erased (resources/message-erasure.ts) keeps no body, its captures no headers or body
 * previews, and counts nothing. An attempt that gives its event up carries its `event.dead` notification,
 * queued by the same statement (resources/notifications.ts), and the workers are woken after it.
 * Rows travel as one jsonb parameter so the statement text — and
 * its prepared plan — is the same whatever the batch size.
 */
import { sql } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import type { RequestCapture, ResponseCapture } from "../db/schema/attempts.ts";
import {
  notificationJobsInsert,
  type PendingNotification,
  wakeForNotifications,
} from "../resources/notifications.ts";

/** One attempt's result, ready to write. */
export interface AttemptRecord {
  event_id: string;
  attempt_id: string;
  event_status: "delivered" | "retry" | "dead";
  last_error: string | null;
  /** RFC 3339, or null when no further attempt is scheduled */
  next_attempt_at: string | null;
  /**
   * the built body as stored, kept if the event has none yet (first attempt, or after a replay); null
   * when it is in the blob store (`body_blob_key`)
   */
  body: string | null;
  /** a body too large for the row: the blob of the bytes sent, and their size (delivery/body-store.ts) */
  body_blob_key?: string | null;
  body_blob_size?: number | null;
  /** the body's media type, kept with it */
  body_content_type: string;
  /** how `body` holds the body (build-body.ts `BodyEncoding`), kept with it */
  body_encoding: "utf8" | "base64";
  trigger: "auto" | "replay";
  attempt_status: "success" | "failed";
  http_status: number;
  latency_ms: number;
  request_capture: RequestCapture;
  response_capture: ResponseCapture;
  /** RFC 3339 time of the attempt's end */
  at: string;
  /**
   * The `event.dead` notification of an attempt that gives the event up: queued by the same statement
   * (when the project subscribes), so it exists if and only if the attempt was recorded.
   */
  notification?: PendingNotification | null;
}

/** Writes attempt records for one lease owner. */
export interface AttemptRecorder {
  /** Resolves true when written, false when the lease was no longer ours (nothing written). */
  record(r: AttemptRecord): Promise<boolean>;
  /** Records handed to {@link record} and not yet written (queued or in the statement in flight). */
  pending(): number;
}

const MAX_BATCH = 200;

/**
 * A record as it travels in the statement. When the request capture's `body_preview` is the whole body
 * (bodies up to 16 KiB, nearly all), it is left out and filled in from `body` by the statement, so the
 * body crosses the wire once instead of twice.
 */
function onTheWire(r: AttemptRecord): Omit<AttemptRecord, "notification"> & {
  preview_is_body: boolean;
  ntf_job_id: string | null;
  ntf_body: PendingNotification["body"] | null;
} {
  const { notification, ...rest } = r;
  const ntf = { ntf_job_id: notification?.job_id ?? null, ntf_body: notification?.body ?? null };
  const previewIsBody = r.request_capture.body_preview === r.body;
  if (!previewIsBody) return { ...rest, ...ntf, preview_is_body: false };
  return {
    ...rest,
    ...ntf,
    request_capture: { ...r.request_capture, body_preview: "" },
    preview_is_body: true,
  };
}

/** Creates a recorder for `owner`; see the module comment. */
export function createAttemptRecorder(database: Database, owner: string): AttemptRecorder {
  type Pending = { r: AttemptRecord; resolve: (ok: boolean) => void; reject: (e: unknown) => void };
  let queue: Pending[] = [];
  let flushing = false;
  let writing = 0;

  const flush = async (): Promise<void> => {
    flushing = true;
    while (queue.length > 0) {
      const batch = queue.slice(0, MAX_BATCH);
      queue = queue.slice(MAX_BATCH);
      writing = batch.length;
      try {
        const written = await writeBatch(
          database,
          owner,
          batch.map((p) => p.r),
        );
        for (const p of batch) p.resolve(written.has(p.r.event_id));
      } catch (err) {
        for (const p of batch) p.reject(err);
      } finally {
        writing = 0;
      }
    }
    flushing = false;
  };

  return {
    record(r) {
      return new Promise<boolean>((resolve, reject) => {
        queue.push({ r, resolve, reject });
        if (!flushing) void flush();
      });
    },
    pending: () => queue.length + writing,
  };
}

async function writeBatch(database: Database, owner: string, records: AttemptRecord[]): Promise<Set<string>> {
  // The notification part is in the statement only when a record carries one (an event given up):
  // Postgres initialises every CTE's plan on each execution, and most batches have none.
  const notifies = records.some((r) => r.notification);
  const rows = await database.rows<{ event_id: string; notified?: boolean }>(sql`
    with input as (
      select * from jsonb_to_recordset(${JSON.stringify(records.map(onTheWire))}::jsonb) as t(
        event_id uuid, attempt_id text, event_status text, last_error text, next_attempt_at timestamptz,
        body text, body_blob_key text, body_blob_size bigint, body_content_type text, body_encoding text,
        preview_is_body boolean, trigger text, attempt_status text, http_status int,
        latency_ms int, request_capture jsonb, response_capture jsonb, at timestamptz, ntf_job_id text,
        ntf_body jsonb)
    ),
    prev as (
      -- the rows as they were: which events get their body stored by this statement, and their messages
      select id, message_pk, body is null and body_blob_key is null as fills from events
      where id = any(array(select event_id from input))
    ),
    lm as (
      -- The messages whose usage grows (every attempt's), locked before the events (retention locks
      -- a message, then its events by cascade): taking them in the same order cannot deadlock with it.
      select count(*) as n from (
        select m.id from messages m
        where m.id in (select message_pk from prev)
        order by m.id for no key update of m) x
    ),
    upd as (
      update events e set
        attempts = e.attempts + 1,
        status = i.event_status,
        last_error = i.last_error,
        next_attempt_at = i.next_attempt_at,
        -- an erased message (message_pk null) keeps no body, even from an attempt that was in flight
        body = case when e.message_pk is null then null when prev.fills then i.body else e.body end,
        body_blob_key = case when e.message_pk is null then null when prev.fills then i.body_blob_key
          else e.body_blob_key end,
        body_blob_size = case when e.message_pk is null then null when prev.fills then i.body_blob_size
          else e.body_blob_size end,
        body_content_type = case when prev.fills then i.body_content_type else e.body_content_type end,
        body_encoding = case when prev.fills then i.body_encoding else e.body_encoding end,
        lease_owner = null,
        lease_expires_at = null,
        updated_at = i.at
      from input i join prev on prev.id = i.event_id
      -- the array condition lets the planner fetch the rows by primary key instead of scanning events
      where e.id = i.event_id and e.id = any(array(select event_id from input)) and e.lease_owner = ${owner}
        and (select n from lm) >= 0
      returning e.id, e.attempts, e.message_pk, e.project_id, e.endpoint_id,
        case when prev.fills then coalesce(octet_length(e.body), e.body_blob_size, 0) else 0 end as added
    ),
    rec as (
      -- the attempt rows as they are written
      select i.attempt_id, upd.id, upd.attempts, upd.endpoint_id, upd.message_pk, upd.project_id, upd.added,
        i.trigger, i.attempt_status, i.http_status, i.latency_ms,
        case when upd.message_pk is null
            then i.request_capture || '{"headers": {}, "body_preview": ""}'::jsonb
          when i.preview_is_body then jsonb_set(i.request_capture, '{body_preview}', to_jsonb(i.body))
          else i.request_capture end as request_capture,
        case when upd.message_pk is null then i.response_capture || '{"headers": {}, "body_preview": ""}'::jsonb
          else i.response_capture end as response_capture,
        i.at
      from upd join input i on i.event_id = upd.id
    ),
    grown as (
      -- a body stored by this statement and every attempt's captures (as the JSON text of the column)
      select message_pk, project_id, sum(added + octet_length(request_capture::text)
        + octet_length(response_capture::text)) as n
      from rec where message_pk is not null group by message_pk, project_id
    ),
    grow_messages as (
      update messages m set stored_bytes = m.stored_bytes + g.n from grown g where m.id = g.message_pk
    ),
    grow_projects as (
      -- no quota guard: a body of an accepted message is delivered even when it takes usage over the
      -- quota (the next message is refused instead)
      update projects p set storage_bytes = p.storage_bytes + s.n
      from (select project_id, sum(n) as n from grown group by project_id) s where p.id = s.project_id
    )${
      notifies
        ? sql`, ntf as (
      ${notificationJobsInsert(sql`select i.ntf_job_id, upd.project_id, i.ntf_body
        from upd join input i on i.event_id = upd.id where i.ntf_body is not null`)}
    ), ins as (
      insert into attempts (id, event_id, number, endpoint_id, trigger, status, http_status, latency_ms,
        request_capture, response_capture, created_at)
      select attempt_id, id, attempts, endpoint_id, trigger, attempt_status, http_status, latency_ms,
        request_capture, response_capture, at
      from rec
      returning event_id
    )
    select event_id, exists (select 1 from ntf) as notified from ins`
        : sql`
    insert into attempts (id, event_id, number, endpoint_id, trigger, status, http_status, latency_ms,
      request_capture, response_capture, created_at)
    select attempt_id, id, attempts, endpoint_id, trigger, attempt_status, http_status, latency_ms,
      request_capture, response_capture, at
    from rec
    returning event_id`
    }`);
  // After the commit (a single statement commits on its own): the queued notifications are due now.
  if (rows.some((r) => r.notified === true)) await wakeForNotifications(database);
  return new Set(rows.map((r) => String(r.event_id)));
}
