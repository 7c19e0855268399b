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
import type { BlobRef } from "../attachments/blob-store.ts";
import type { AppContext } from "../context.ts";

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
