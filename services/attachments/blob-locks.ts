/**
 * The blob lock protocol shared by ingest and the retention sweeper. Blobs are content-addressed and
 * shared across messages and projects, so the sweeper deletes one only after a re-check made under an
 * exclusive transaction-level advisory lock on its key, while an ingest transaction that is about to
 * reference blobs holds the same keys shared (and re-`put`s any blob that is gone) until it commits.
 * Either side may take the locks through this module, or, for batched statements, take the ids from
 * {@link blobLockIds} and lock them in SQL under {@link BLOB_LOCK_NAMESPACE} (ingest/store.ts).
 */
import { sql } from "drizzle-orm";
import type { Db } from "../db/client.ts";
import { sha256OfKey } from "./blob-store.ts";

type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];
type Executor = Pick<Db, "execute">;

/** Advisory-lock namespace (first key of the two-int form) for blob keys. */
export const BLOB_LOCK_NAMESPACE = 0x6d68_6273;

/** The second advisory-lock key of a blob: the first 32 bits of its SHA-256, as a signed int4. */
function lockIdOf(key: string): number {
  return Number.parseInt(sha256OfKey(key).slice(0, 8), 16) | 0;
}

/** The advisory-lock ids of `keys`, deduplicated and in the one fixed order every locker uses. */
export function blobLockIds(keys: readonly string[]): number[] {
  // A fixed order keeps two lockers of overlapping key sets from deadlocking.
  return [...new Set(keys.map(lockIdOf))].sort((a, b) => a - b);
}

/** Takes transaction-level advisory locks on `keys` (in {@link blobLockIds} order) in `mode`. */
export async function lockBlobKeys(tx: Executor, keys: readonly string[], mode: "shared" | "exclusive") {
  const ids = blobLockIds(keys);
  const fn = mode === "shared" ? sql`pg_advisory_xact_lock_shared` : sql`pg_advisory_xact_lock`;
  for (const id of ids) await tx.execute(sql`select ${fn}(${BLOB_LOCK_NAMESPACE}::int4, ${id}::int4)`);
}

/**
 * For ingest: hold the keys of blobs about to be referenced against deletion by the sweeper until the
 * transaction ends. Call inside the transaction that inserts the referencing rows, then make sure each
 * blob is (still) stored — `stat`, and `put` again if it is gone — before inserting them.
 */
export function lockBlobKeysShared(tx: Tx | Executor, keys: readonly string[]): Promise<void> {
  return lockBlobKeys(tx, keys, "shared");
}
