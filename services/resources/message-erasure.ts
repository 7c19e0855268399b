/**
 * Erasing one stored message and every copy of its content (`DELETE /v1/messages/{message_id}`,
 * docs/api.md "Erasing a message"; docs/security.md). In one transaction:
 *
 * - the message row goes: its parsed form, its raw bytes when kept in the row, its full-text entry,
 *   its attachment rows and download tokens (both `on delete cascade`);
 * - its events stay, with their status, attempt count and route snapshot, but lose their link to the
 *   message (`message_pk` null), their built webhook body and the attachment policy notes (file names);
 * - their attempts stay, but the request and response captures keep only the method, URL, HTTP status
 *   and network error: headers and body previews are blanked;
 * - the project's `storage_bytes` drops by the message's `stored_bytes` (its raw bytes, attachments,
 *   parsed form and event bodies, ingest/quota.ts).
 *
 * After the commit, the raw blob and the attachment blobs are deleted from the blob store unless another
 * stored message (of any project) still references them: the same re-check under the same advisory locks
 * as retention (attachments/retention.ts), so a concurrent ingest of the same content keeps its blob.
 *
 * Lock order: the message row first, then its events, as retention and the attempt recorder do, so an
 * erasure cannot deadlock with them. An attempt that was in flight when the message was erased finds
 * `message_pk` null when it is recorded and keeps no body (delivery/record.ts); a worker that claims an
 * event of an erased message ends it `dead` with `message_erased: …` (delivery/deliver.ts).
 */
import { sql } from "drizzle-orm";
import { deleteUnreferencedBlobs } from "../attachments/retention.ts";
import type { AppContext } from "../context.ts";
import type { Db } from "../db/client.ts";
import { AppError } from "../lib/errors.ts";
import { resolveMessage } from "./message-archive.ts";

/** What one erasure removed. */
export interface ErasureResult {
  /** the erased message's `msg_…` id */
  id: string;
  /** bytes the project's storage usage dropped by */
  bytesReleased: number;
  /** events kept with their message link, body and captures removed */
  eventsScrubbed: number;
  /** blobs deleted from the store (those no other message shares) */
  blobsDeleted: number;
}

type Executor = Pick<Db, "execute">;

/** Rows of a raw statement, whichever driver ran it (postgres.js: array; PGlite: `{rows}`). */
async function run<T>(db: Executor, query: ReturnType<typeof sql>): Promise<T[]> {
  const r = (await db.execute(query)) as unknown;
  return Array.isArray(r) ? (r as T[]) : ((r as { rows: T[] }).rows ?? []);
}

/**
 * Erases the project's message named by `key` (a `msg_…` id or a Message-ID, as for reading it).
 * @throws AppError `messages.not_found` (none, or erased meanwhile) or `messages.ambiguous`.
 */
export async function eraseMessage(ctx: AppContext, projectId: string, key: string): Promise<ErasureResult> {
  const { id } = await resolveMessage(ctx, projectId, key);
  const erased = await ctx.database.db.transaction(async (tx) => {
    const [message] = await run<{
      stored: number;
      raw_blob_key: string | null;
      text_blob_key: string | null;
      html_blob_key: string | null;
    }>(
      tx,
      sql`select stored_bytes::float8 as stored, raw_blob_key, text_blob_key, html_blob_key from messages
          where id = ${id} and project_id = ${projectId} for update`,
    );
    // Erased (or removed by retention) between the lookup and the lock.
    if (!message) return null;
    const blobs = await run<{ key: string }>(
      tx,
      sql`select distinct blob_key as key from attachments where message_pk = ${id}`,
    );
    // webhook bodies kept in the blob store (delivery/body-store.ts), freed with the rest
    const bodyBlobs = await run<{ key: string }>(
      tx,
      sql`select distinct body_blob_key as key from events where message_pk = ${id} and body_blob_key is not null`,
    );
    const scrubbed = await run<{ id: string }>(
      tx,
      sql`update events set message_pk = null, body = null, body_content_type = null, body_encoding = null,
            body_blob_key = null, body_blob_size = null, policy_notes = null
          where message_pk = ${id}
          returning id`,
    );
    if (scrubbed.length > 0)
      await tx.execute(sql`
        update attempts set
          request_capture = jsonb_build_object('method', request_capture -> 'method',
            'url', request_capture -> 'url', 'headers', '{}'::jsonb, 'body_preview', ''),
          response_capture = jsonb_build_object('status', response_capture -> 'status',
            'headers', '{}'::jsonb, 'body_preview', '', 'network_error', response_capture -> 'network_error')
        where event_id in (${sql.join(
          scrubbed.map((e) => sql`${e.id}::uuid`),
          sql`, `,
        )})`);
    await tx.execute(sql`delete from messages where id = ${id}`);
    await tx.execute(sql`delete from message_search_queue where message_pk = ${id}`);
    await tx.execute(
      sql`update projects set storage_bytes = greatest(0, storage_bytes - ${Number(message.stored)}::bigint)
          where id = ${projectId}`,
    );
    return {
      bytes: Number(message.stored),
      events: scrubbed.length,
      keys: [
        ...[message.raw_blob_key, message.text_blob_key, message.html_blob_key].filter((k) => k !== null),
        ...blobs.map((b) => b.key),
        ...bodyBlobs.map((b) => b.key),
      ],
    };
  });
  if (!erased)
    throw new AppError("messages.not_found", "no stored message with that id or Message-ID in this project");
  let blobsDeleted = 0;
  try {
    blobsDeleted = await deleteUnreferencedBlobs(ctx, erased.keys);
  } catch (err) {
    // The rows are gone and nothing references these blobs; a later erasure or retention pass over the
    // same content deletes them. Logged so an operator can see the store failing.
    ctx.logger.error("erasure: blob deletion failed", { err, message: id });
  }
  ctx.logger.info("message erased", { message: id, events: erased.events, blobs: blobsDeleted });
  return { id, bytesReleased: erased.bytes, eventsScrubbed: erased.events, blobsDeleted };
}
