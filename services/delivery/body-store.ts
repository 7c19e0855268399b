/**
 * Webhook bodies too large for their event's row (docs/delivery.md). A body built once per event is
 * stored with it so retries send the same bytes; one of {@link BODY_BLOB_MIN_BYTES} or more goes to
 * the blob store as the bytes sent (`events.body_blob_key`, with their size in `events.body_blob_size`
 * for the quota) instead of `events.body`. A 49 MB body in the row travelled as text through the
 * statement that records the attempt (escaped into its JSON parameter, then copied by the driver):
 * that step alone raised the service's peak memory by about 4× the body.
 *
 * The blob is content-addressed like every other; retention and erasure check `events.body_blob_key`
 * before deleting a blob (attachments/retention.ts).
 */
import { sql } from "drizzle-orm";
import type { BlobRef } from "../attachments/blob-store.ts";
import type { AppContext } from "../context.ts";
import type { Database } from "../db/client.ts";
import { shrinkUsage } from "./usage.ts";

/** Bodies of this many bytes (as sent) or more are kept in the blob store. */
export const BODY_BLOB_MIN_BYTES = 1024 * 1024;

/** True when the body sent as `wire` is kept in the blob store. */
export function keepsBodyInBlob(wire: string | Uint8Array): wire is Uint8Array {
  return typeof wire !== "string" && wire.byteLength >= BODY_BLOB_MIN_BYTES;
}

/** Stores the bytes of a body. */
export function storeBody(ctx: Pick<AppContext, "blobs">, wire: Uint8Array): Promise<BlobRef> {
  return ctx.blobs.put(wire);
}

/** The bytes of a stored body, as they are sent again. */
export async function readStoredBody(ctx: Pick<AppContext, "blobs">, key: string): Promise<Uint8Array> {
  return new Uint8Array(await new Response(await ctx.blobs.read(key)).arrayBuffer());
}

/**
 * The bytes of a stored body, or null when its blob is gone from the store (deleted by hand, a store
 * restored from an older backup): the event then forgets the key, and what it counted against its
 * message's and project's usage, in one statement, while the caller's lease holds (`owner`), so that
 * the attempt builds the body again from the message, as a replay does, and records the new one.
 * Without that, every attempt would fail on the same missing key before anything is recorded.
 */
export async function readStoredBodyOrForget(
  ctx: Pick<AppContext, "blobs" | "database">,
  event: { id: string; bodyBlobKey: string },
  owner: string,
): Promise<Uint8Array | null> {
  if ((await ctx.blobs.stat(event.bodyBlobKey)) !== null) return readStoredBody(ctx, event.bodyBlobKey);
  await forgetStoredBody(ctx.database, event.id, event.bodyBlobKey, owner);
  return null;
}

/**
 * Clears an event's `body_blob_key` (only if it is still `key` and the lease still `owner`'s) and takes
 * its size off its message's `stored_bytes` and its project's `storage_bytes` (ingest/quota.ts),
 * locking the message before the event, in the order retention and the attempt recorder use.
 */
async function forgetStoredBody(
  database: Database,
  eventId: string,
  key: string,
  owner: string,
): Promise<void> {
  await database.rows(sql`
    with old as (
      select id, message_pk, project_id, coalesce(body_blob_size, 0) as n from events
      where id = ${eventId}::uuid and body_blob_key = ${key} and lease_owner = ${owner}
    ),
    lm as (
      select count(*) as n from (
        select m.id from messages m where m.id in (select message_pk from old)
        for no key update of m) x
    ),
    upd as (
      update events set body_blob_key = null, body_blob_size = null
      where id = ${eventId}::uuid and body_blob_key = ${key} and lease_owner = ${owner}
        and (select n from lm) >= 0
      returning id
    ),
    cleared as (select old.* from old join upd on upd.id = old.id where old.n > 0),
    ${shrinkUsage(sql`select message_pk, project_id, n from cleared`)}
    select count(*)::int as n from upd`);
}
