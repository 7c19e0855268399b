/**
 * The write of one ingest as ONE statement (sent in a group commit with the concurrent ones,
 * group-commit.ts; atomic on its own either way): bump the project's `storage_bytes` only if it stays
 * within the quota (so concurrent messages cannot overshoot it), insert the message only if the bump happened and the same raw message is not already stored
 * (docs/ingest.md, race-safe through the unique index `messages_dedupe_idx`), and insert the attachment
 * rows and events only if the message went in. One round trip instead of six (BEGIN, four statements,
 * COMMIT) keeps the hot path short (the ingest benchmark's target is ≥ 500 messages/s, docs/benchmarks.md). Parts with nothing to do (no
 * blob to lock, no attachment, no event) are left out of the statement: Postgres initialises every
 * CTE's plan on each execution, and that was a fifth of its time per message.
 *
 * The statement also checks, in the same snapshot, that the project's enabled routes are still the
 * ones the events were made from (`routesJson`, so a cached lookup cannot create events from outdated
 * routes) and that the same raw message is not stored yet; when either fails nothing is written.
 *
 * Attachment ids: when the project already stores a message with the same Message-ID and other bytes,
 * the statement appends `attachmentIdSuffix` (mail/extract.ts) to every attachment id, in the attachment
 * rows and in the stored model's descriptors alike, so an id from an event's payload names that event's
 * message only (docs/attachments.md). Checking here, not in the lookup, costs no round trip and sees
 * every earlier statement of the same batch; only messages with attachments run the check. Stored
 * Message-IDs always carry their angle brackets (mail/parse.ts), so equality covers every form a
 * lookup by Message-ID accepts (`messageIdCandidates`, attachments/tokens.ts).
 *
 * A held message's `message.held` notification is queued by the statement too, only when the message
 * goes in: it exists if and only if the message does.
 *
 * Message-ID conflicts: the same check (always run: one probe of the dedupe index) is stored in the
 * parsed model as `message_id_conflict`, which the mapper, generic@2 and the event detail show.
 *
 * Outcomes: `inserted` → stored; `duplicatePk` → already stored; `!routesCurrent` → routes changed, the
 * caller re-reads them and retries; otherwise `!bumped` → over quota or the project is gone (the caller
 * re-checks); `bumped && !inserted` → a concurrent copy won the unique index, and the caller gives the
 * bytes back (`releaseStorage`, quota.ts).
 */
import { fillPlaceholders, type SQL, sql } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { BLOB_LOCK_NAMESPACE } from "../attachments/blob-locks.ts";
import type { GroupCommits } from "../context.ts";
import type { EventStatus, RouteSnapshot } from "../db/schema/index.ts";
import type { PolicyNote } from "../lib/attachment-policy.ts";
import type { AttachmentDescriptor, Envelope, NormalizedMessage, SourceType } from "../lib/message.ts";
import { attachmentIdSuffix } from "../mail/extract.ts";
import { notificationJobsInsert, type PendingNotification } from "../resources/notifications.ts";
import { enabledRoutesJson } from "./lookup.ts";

/** The message row to insert. */
export interface MessageRow {
  id: string;
  projectId: string;
  messageId: string;
  rawSha256: string;
  /** the raw message's blob, or null when `rawBytes` carries it (raw.ts) */
  rawBlobKey: string | null;
  /** the raw message itself when it is kept in the row, else null */
  rawBytes: Uint8Array | null;
  rawSizeBytes: number;
  storedBytes: number;
  sourceType: SourceType;
  envelope: Envelope | null;
  parsed: NormalizedMessage;
  /** `parsed` as the JSON text written to `messages.parsed` (its length is counted, quota.ts) */
  parsedJson: string;
  /** the blobs of a text or HTML body too large for `parsed` (attachments/body-blobs.ts), else null */
  textBlobKey?: string | null;
  htmlBlobKey?: string | null;
  receivedAt: Date;
}

/** An attachment row to insert: what extraction described, and where its bytes are stored. */
export interface AttachmentRow {
  descriptor: AttachmentDescriptor;
  blobKey: string;
}

/** One event to create with the message. */
export interface EventRow {
  id: string;
  routeId: string;
  status: EventStatus;
  lastError: string | null;
  /** null for an event that is not to be delivered (discarded) */
  nextAttemptAt: Date | null;
  idempotencyKey: string;
  routeSnapshot: RouteSnapshot;
  /** what the route's attachment policy stripped or let through (null when nothing) */
  policyNotes?: PolicyNote[] | null;
}

/** Everything one run of the statement writes, and what it checks against. */
export interface StoreInput {
  message: MessageRow;
  attachments: readonly AttachmentRow[];
  events: readonly EventRow[];
  /** the project's quota (`PROJECT_QUOTA_BYTES`); the bump is refused past it */
  quotaBytes: number;
  /** `created_at` and `updated_at` of the events */
  now: Date;
  /** the routes the events were made from, as the lookup read them (`ProjectLookup.routesJson`) */
  routesJson: string;
  /** advisory-lock ids of the blobs the rows reference (`blobLockIds`), taken shared — see the statement */
  blobLocks: readonly number[];
  /**
   * A notification about the message (`message.held`), queued by the statement when the message goes
   * in and the project subscribes to its type (resources/notifications.ts)
   */
  notification?: PendingNotification | null;
}

/** What the statement did (see the module comment). */
export interface StoreOutcome {
  inserted: boolean;
  bumped: boolean;
  /** false: the project's routes are no longer those the events were made from; nothing was written */
  routesCurrent: boolean;
  /** the same raw message already stored in the project (nothing was written), or null */
  duplicatePk: string | null;
  /** the project's `storage_bytes` after the bump, or null when there was none */
  usedBytes: number | null;
  /** the Message-ID was already stored with other bytes: the attachment ids got the suffix */
  idsSuffixed: boolean;
  /** the Message-ID was already stored with other bytes (stored as the model's `message_id_conflict`) */
  conflict: boolean;
  /** the statement queued the input's notification (the caller wakes the workers after the commit) */
  notified: boolean;
}

/** The statement's parameters, by placeholder name. */
interface StoreParams {
  locks: string;
  lockNamespace: number;
  projectId: string;
  routesJson: string;
  messageId: string;
  rawSha256: string;
  storedBytes: number;
  quotaBytes: number;
  id: string;
  synthetic: boolean;
  rawBlobKey: string | null;
  rawBytes: Buffer | null;
  rawSizeBytes: number;
  sourceType: string;
  /** `attachmentIdSuffix` of the raw message, applied only when its Message-ID is already stored */
  idSuffix: string;
  envelope: string | null;
  parsed: string;
  textBlobKey: string | null;
  htmlBlobKey: string | null;
  receivedAt: string;
  attachments: string;
  events: string;
  now: string;
  /** the notification as (job_id, project_id, body), or null */
  notification: string | null;
}

const p = (name: keyof StoreParams) => sql.placeholder(name);
const dialect = new PgDialect();

/** The model to store: with `idSuffix` on each attachment descriptor's `id` when `s.shared`. */
const suffixedParsed = sql`(select case when s.shared then jsonb_set(x.j, '{attachments}', coalesce(
        (select jsonb_agg(jsonb_set(a.v, '{id}', to_jsonb((a.v->>'id') || ${p("idSuffix")}::text)) order by a.i)
          from jsonb_array_elements(x.j->'attachments') with ordinality as a(v, i)), '[]'::jsonb))
        else x.j end
      from (select ${p("parsed")}::jsonb as j) as x, s)`;

/**
 * The model with `message_id_conflict` set to whether the Message-ID is shared. The intake writes it
 * `false`, so it is rewritten only for a conflict: rewriting a jsonb value copies all of it, which for
 * a message with a 50 MB body was 50 MB more of the database's memory (PGlite's is the service's own).
 */
function withConflict(model: SQL): SQL {
  return sql`(select case when y.j->'message_id_conflict' = to_jsonb(s.shared) then y.j
        else jsonb_set(y.j, '{message_id_conflict}', to_jsonb(s.shared)) end
      from (select ${model} as j) as y, s)`;
}

/**
 * The statement's text and parameter slots for one shape (with or without blob locks, attachment rows
 * and events), built once: a message only fills in the values (`fillPlaceholders`). Parts with nothing
 * to do are left out: Postgres initialises every CTE's plan on each execution.
 */
function statementFor(
  locks: boolean,
  attachments: boolean,
  events: boolean,
  notifies: boolean,
): { text: string; slots: unknown[] } {
  const key = `${Number(locks)}${Number(attachments)}${Number(events)}${Number(notifies)}`;
  const cached = statements.get(key);
  if (cached) return cached;
  const query = sql`
    with ${
      locks
        ? sql`lk as (
      -- Shared locks on the referenced blobs' keys, held until commit: the retention sweeper re-checks
      -- references and deletes a blob under the exclusive lock, so it either finishes before these rows
      -- exist (the caller then finds the blob gone after commit and stores it again) or sees them.
      select count(pg_advisory_xact_lock_shared(${p("lockNamespace")}::int4, x::int4)) as n
      from jsonb_array_elements_text(${p("locks")}::jsonb) as x
    ), `
        : sql``
    }r as (
      select ${enabledRoutesJson(sql`${p("projectId")}::text`)} = ${p("routesJson")}::jsonb as current
    ), d as (
      select id from messages
      where project_id = ${p("projectId")}::text and message_id = ${p("messageId")}::text
        and raw_sha256 = ${p("rawSha256")}::text
    ), q as (
      update projects set storage_bytes = storage_bytes + ${p("storedBytes")}::bigint
      where id = ${p("projectId")}::text and storage_bytes + ${p("storedBytes")}::bigint <= ${p("quotaBytes")}::bigint
        and (select current from r) and not exists (select 1 from d)${locks ? sql` and (select n from lk) >= 0` : sql``}
      returning id, storage_bytes
    ), s as (
      -- Another message with this Message-ID and other bytes is stored (or went in earlier in the batch).
      select exists (select 1 from messages where project_id = ${p("projectId")}::text
        and message_id = ${p("messageId")}::text and raw_sha256 <> ${p("rawSha256")}::text) as shared
    ), m as (
      insert into messages (id, project_id, message_id, message_id_is_synthetic, raw_sha256, raw_blob_key,
        raw_bytes, raw_size_bytes, stored_bytes, source_type, envelope, parsed, text_blob_key, html_blob_key,
        received_at)
      select ${p("id")}::text, ${p("projectId")}::text, ${p("messageId")}::text, ${p("synthetic")}::boolean,
        ${p("rawSha256")}::text, ${p("rawBlobKey")}::text, ${p("rawBytes")}::bytea, ${p("rawSizeBytes")}::bigint,
        ${p("storedBytes")}::bigint, ${p("sourceType")}::text, ${p("envelope")}::jsonb,
        ${withConflict(attachments ? suffixedParsed : sql`${p("parsed")}::jsonb`)}, ${p("textBlobKey")}::text,
        ${p("htmlBlobKey")}::text, ${p("receivedAt")}::timestamptz
      where exists (select 1 from q)
      on conflict (project_id, message_id, raw_sha256) do nothing
      returning id
    ), sq as (
      -- queued for the full-text search indexer (resources/message-search-index.ts)
      insert into message_search_queue (message_pk) select id from m
    )${
      attachments
        ? sql`, a as (
      insert into attachments (message_pk, attachment_id, position, blob_key, filename, content_type, size,
        sha256, is_inline, content_id)
      select ${p("id")}::text,
        x.attachment_id || case when (select shared from s) then ${p("idSuffix")}::text else '' end,
        x.position, x.blob_key, x.filename, x.content_type, x.size, x.sha256, x.is_inline, x.content_id
      from jsonb_to_recordset(${p("attachments")}::jsonb) as x(attachment_id text, position int,
        blob_key text, filename text, content_type text, size bigint, sha256 text, is_inline boolean,
        content_id text)
      where exists (select 1 from m)
    )`
        : sql``
    }${
      events
        ? sql`, e as (
      insert into events (id, project_id, message_pk, route_id, status, last_error, next_attempt_at,
        idempotency_key, route_snapshot, policy_notes, created_at, updated_at)
      select x.id, ${p("projectId")}::text, ${p("id")}::text, x.route_id, x.status, x.last_error,
        x.next_attempt_at, x.idempotency_key, x.route_snapshot, x.policy_notes, ${p("now")}::timestamptz,
        ${p("now")}::timestamptz
      from jsonb_to_recordset(${p("events")}::jsonb) as x(id uuid, route_id text, status text,
        last_error text, next_attempt_at timestamptz, idempotency_key text, route_snapshot jsonb,
        policy_notes jsonb)
      where exists (select 1 from m)
    )`
        : sql``
    }${
      notifies
        ? sql`, n as (
      ${notificationJobsInsert(sql`select x.job_id, x.project_id, x.body
        from jsonb_to_record(${p("notification")}::jsonb) as x(job_id text, project_id text, body jsonb)
        where exists (select 1 from m)`)}
    )`
        : sql``
    }
    select exists (select 1 from m) as inserted, exists (select 1 from q) as bumped,
      (select current from r) as routes_current, (select id from d limit 1) as duplicate_pk,
      (select storage_bytes::float8 from q) as used,
      ${attachments ? sql`(select shared from s)` : sql`false`} as ids_suffixed,
      (select shared from s) as conflict, ${notifies ? sql`exists (select 1 from n)` : sql`false`} as notified`;
  const built = dialect.sqlToQuery(query);
  const made = { text: built.sql, slots: built.params };
  statements.set(key, made);
  return made;
}
const statements = new Map<string, { text: string; slots: unknown[] }>();

/** Runs the statement in a group commit with the concurrent ones (`commits`). */
export async function storeMessage(commits: GroupCommits, input: StoreInput): Promise<StoreOutcome> {
  const { message: m, blobLocks } = input;
  const attachments = input.attachments.map((a, position) => ({
    attachment_id: a.descriptor.id,
    position,
    blob_key: a.blobKey,
    filename: a.descriptor.filename,
    content_type: a.descriptor.content_type,
    size: a.descriptor.size,
    sha256: a.descriptor.sha256 ?? "",
    is_inline: a.descriptor.is_inline,
    content_id: a.descriptor.content_id ?? null,
  }));
  // Keys as the statement's `jsonb_to_recordset` column list names them.
  const events = input.events.map((e) => ({
    id: e.id,
    route_id: e.routeId,
    status: e.status,
    last_error: e.lastError,
    next_attempt_at: e.nextAttemptAt?.toISOString() ?? null,
    idempotency_key: e.idempotencyKey,
    route_snapshot: e.routeSnapshot,
    policy_notes: e.policyNotes ?? null,
  }));
  const values: StoreParams = {
    locks: JSON.stringify(blobLocks),
    lockNamespace: BLOB_LOCK_NAMESPACE,
    projectId: m.projectId,
    routesJson: input.routesJson,
    messageId: m.messageId,
    rawSha256: m.rawSha256,
    storedBytes: m.storedBytes,
    quotaBytes: input.quotaBytes,
    id: m.id,
    synthetic: m.parsed.message_id_is_synthetic,
    rawBlobKey: m.rawBlobKey,
    rawBytes: m.rawBytes === null ? null : asBuffer(m.rawBytes),
    rawSizeBytes: m.rawSizeBytes,
    sourceType: m.sourceType,
    idSuffix: attachments.length > 0 ? attachmentIdSuffix(m.rawSha256) : "",
    envelope: m.envelope === null ? null : JSON.stringify(m.envelope),
    parsed: m.parsedJson,
    textBlobKey: m.textBlobKey ?? null,
    htmlBlobKey: m.htmlBlobKey ?? null,
    receivedAt: m.receivedAt.toISOString(),
    attachments: JSON.stringify(attachments),
    events: JSON.stringify(events),
    now: input.now.toISOString(),
    notification: input.notification ? JSON.stringify(input.notification) : null,
  };
  const statement = statementFor(
    blobLocks.length > 0,
    attachments.length > 0,
    events.length > 0,
    Boolean(input.notification),
  );
  const rows = await commits.run<{
    inserted: boolean;
    bumped: boolean;
    routes_current: boolean;
    duplicate_pk: string | null;
    used: number | string | null;
    ids_suffixed: boolean;
    conflict: boolean;
    notified: boolean;
  }>({
    text: statement.text,
    params: fillPlaceholders(statement.slots, values as unknown as Record<string, unknown>),
    projectId: m.projectId,
    blobLocks,
  });
  const row = rows[0];
  return {
    inserted: row?.inserted === true,
    bumped: row?.bumped === true,
    routesCurrent: row?.routes_current === true,
    duplicatePk: row?.duplicate_pk ?? null,
    usedBytes: row?.used === null || row?.used === undefined ? null : Number(row.used),
    idsSuffixed: row?.ids_suffixed === true,
    conflict: row?.conflict === true,
    notified: row?.notified === true,
  };
}

/** The bytes as a Buffer (a view, no copy): both drivers send a Buffer parameter as bytea. */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
