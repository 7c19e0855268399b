/**
 * Quota accounting of the intake. A project's `storage_bytes` counts every byte stored for its
 * messages (docs/ingest.md, "Storage quota"): per message the raw message, each distinct attachment
 * of it and its parsed form (`messages.parsed`, counted as the UTF-8 length of the JSON text written),
 * and, once delivery stores it, each event's webhook body and each attempt's captures (delivery/record.ts
 * adds them, a replay that clears a body takes it back, delivery/replay.ts). `messages.stored_bytes` holds the same sum per message,
 * so retention gives back exactly what was counted. The store statement (store.ts) adds a message's bytes with a
 * guarded `update … where storage_bytes + n <= quota`, so concurrent messages cannot overshoot the
 * quota; this module says what a message counts, how a refusal reads, and gives back the bytes of a
 * bump whose message turned out to be a duplicate.
 */
import { sql } from "drizzle-orm";
import type { Db } from "../db/client.ts";
import { AppError } from "../lib/errors.ts";
import type { ExtractedAttachment } from "../mail/extract.ts";

/**
 * Bytes accounted to the project's quota when one message is stored: the raw message, each distinct
 * attachment of it, and `parsedBytes`, the size of its stored parsed form. Accounting is per message, not per physical blob (blobs are shared by content
 * across messages and projects), so a project's usage does not depend on what others store.
 */
export function storedBytesOf(
  rawSize: number,
  extracted: readonly ExtractedAttachment[],
  parsedBytes = 0,
): number {
  const seen = new Map<string, number>();
  for (const a of extracted) seen.set(a.descriptor.sha256 ?? a.descriptor.id, a.descriptor.size);
  let total = rawSize + parsedBytes;
  for (const size of seen.values()) total += size;
  return total;
}

/** The refusal of a message that does not fit in its project's quota. */
export function quotaExceeded(): AppError {
  return new AppError("ingest.quota_exceeded", "the project's storage quota is reached");
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
