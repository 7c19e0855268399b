/**
 * The write of one ingest as ONE statement (on Postgres sent in a group commit with the concurrent
 * ones, group-commit.ts; atomic on its own either way): bump the
 * project's `storage_bytes` only if it stays within the quota (so concurrent messages cannot overshoot
 * it), insert the message only if the bump happened and the same raw message is not already stored
 * (contract §3, race-safe through the unique index `messages_dedupe_idx`), and insert the attachment
 * rows and events only if the message went in. One round trip instead of six (BEGIN, four statements,
 * COMMIT) keeps the hot path short (issue 3 asks for ≥ 500 messages/s). Parts with nothing to do (no
 * blob to lock, no attachment, no event) are left out of the statement: Postgres initialises every
 * CTE's plan on each execution, and that was a fifth of its time per message.
 *
 * The statement also checks, in the same snapshot, that the project's enabled routes are still the
 * ones the events were made from (`routesJson`, so a cached lookup cannot create events from outdated
 * routes) and that the same raw message is not stored yet; when either fails nothing is written.
 *
 * Outcomes: `inserted` → stored; `duplicatePk` → already stored; `!routesCurrent` → routes changed, the
 * caller re-reads them and retries; otherwise `!bumped` → over quota or the project is gone (the caller
 * re-checks); `bumped && !inserted` → a concurrent copy won the unique index, and the caller gives the
 * bytes back with {@link releaseStorage}.
 */
import { sql } from "drizzle-orm";
import { BLOB_LOCK_NAMESPACE } from "../attachments/retention.ts";
import type { Database, Db } from "../db/client.ts";
import type { EventStatus, RouteSnapshot } from "../db/schema/index.ts";
import type { AttachmentDescriptor, Envelope, NormalizedMessage, SourceType } from "../lib/message.ts";
import { enabledRoutesJson } from "./lookup.ts";
import { groupCommittedRows } from "./prepared.ts";

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
  receivedAt: Date;
}

/** One event to create with the message. */
export interface EventRow {
  id: string;
  route_id: string;
  status: EventStatus;
  last_error: string | null;
  next_attempt_at: string | null;
  idempotency_key: string;
  route_snapshot: RouteSnapshot;
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
}

/** Runs the statement. */
export async function storeMessage(
  database: Database,
  m: MessageRow,
  attachments: { descriptor: AttachmentDescriptor; blobKey: string }[],
  events: EventRow[],
  quotaBytes: number,
  now: Date,
  routesJson: string,
  /** advisory-lock ids of the blobs the rows reference (`blobLockIds`), taken shared — see below */
  blobLocks: readonly number[] = [],
): Promise<StoreOutcome> {
  const atts = attachments.map((a, position) => ({
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
  const rows = await groupCommittedRows<{
    inserted: boolean;
    bumped: boolean;
    routes_current: boolean;
    duplicate_pk: string | null;
    used: number | string | null;
  }>(
    database,
    sql`
    with ${
      blobLocks.length > 0
        ? sql`lk as (
      -- Shared locks on the referenced blobs' keys, held until commit: the retention sweeper re-checks
      -- references and deletes a blob under the exclusive lock, so it either finishes before these rows
      -- exist (the caller then finds the blob gone after commit and stores it again) or sees them.
      select count(pg_advisory_xact_lock_shared(${BLOB_LOCK_NAMESPACE}::int4, x::int4)) as n
      from jsonb_array_elements_text(${JSON.stringify(blobLocks)}::jsonb) as x
    ), `
        : sql``
    }r as (
      select ${enabledRoutesJson(sql`${m.projectId}`)} = ${routesJson}::jsonb as current
    ), d as (
      select id from messages
      where project_id = ${m.projectId} and message_id = ${m.messageId} and raw_sha256 = ${m.rawSha256}
    ), q as (
      update projects set storage_bytes = storage_bytes + ${m.storedBytes}::bigint
      where id = ${m.projectId} and storage_bytes + ${m.storedBytes}::bigint <= ${quotaBytes}::bigint
        and (select current from r) and not exists (select 1 from d)${
          blobLocks.length > 0 ? sql` and (select n from lk) >= 0` : sql``
        }
      returning id, storage_bytes
    ), m as (
      insert into messages (id, project_id, message_id, message_id_is_synthetic, raw_sha256, raw_blob_key,
        raw_bytes, raw_size_bytes, stored_bytes, source_type, envelope, parsed, received_at)
      select ${m.id}, ${m.projectId}, ${m.messageId}, ${m.parsed.message_id_is_synthetic}, ${m.rawSha256},
        ${m.rawBlobKey}::text, ${m.rawBytes === null ? null : asBuffer(m.rawBytes)}::bytea, ${m.rawSizeBytes}::bigint, ${m.storedBytes}::bigint, ${m.sourceType},
        ${m.envelope === null ? null : JSON.stringify(m.envelope)}::jsonb, ${JSON.stringify(m.parsed)}::jsonb,
        ${m.receivedAt.toISOString()}::timestamptz
      where exists (select 1 from q)
      on conflict (project_id, message_id, raw_sha256) do nothing
      returning id
    )${
      atts.length > 0
        ? sql`, a as (
      insert into attachments (message_pk, attachment_id, position, blob_key, filename, content_type, size,
        sha256, is_inline, content_id)
      select ${m.id}, x.attachment_id, x.position, x.blob_key, x.filename, x.content_type, x.size, x.sha256,
        x.is_inline, x.content_id
      from jsonb_to_recordset(${JSON.stringify(atts)}::jsonb) as x(attachment_id text, position int,
        blob_key text, filename text, content_type text, size bigint, sha256 text, is_inline boolean,
        content_id text)
      where exists (select 1 from m)
    )`
        : sql``
    }${
      events.length > 0
        ? sql`, e as (
      insert into events (id, project_id, message_pk, route_id, status, last_error, next_attempt_at,
        idempotency_key, route_snapshot, created_at, updated_at)
      select x.id, ${m.projectId}, ${m.id}, x.route_id, x.status, x.last_error, x.next_attempt_at,
        x.idempotency_key, x.route_snapshot, ${now.toISOString()}::timestamptz, ${now.toISOString()}::timestamptz
      from jsonb_to_recordset(${JSON.stringify(events)}::jsonb) as x(id uuid, route_id text, status text,
        last_error text, next_attempt_at timestamptz, idempotency_key text, route_snapshot jsonb)
      where exists (select 1 from m)
    )`
        : sql``
    }
    select exists (select 1 from m) as inserted, exists (select 1 from q) as bumped,
      (select current from r) as routes_current, (select id from d limit 1) as duplicate_pk,
      (select storage_bytes::float8 from q) as used`,
    m.projectId,
    blobLocks,
  );
  const row = rows[0];
  return {
    inserted: row?.inserted === true,
    bumped: row?.bumped === true,
    routesCurrent: row?.routes_current === true,
    duplicatePk: row?.duplicate_pk ?? null,
    usedBytes: row?.used === null || row?.used === undefined ? null : Number(row.used),
  };
}

/** The bytes as a Buffer (a view, no copy): both drivers send a Buffer parameter as bytea. */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Gives back bytes counted by a bump whose message turned out to be a duplicate. */
export async function releaseStorage(
  db: Pick<Db, "execute">,
  projectId: string,
  bytes: number,
): Promise<void> {
  await db.execute(
    sql`update projects set storage_bytes = greatest(storage_bytes - ${bytes}::bigint, 0) where id = ${projectId}`,
  );
}
