/**
 * Spooling raw messages to disk (`DATA_DIR/spool`) so that intake never holds a whole message in
 * memory per connection: SMTP DATA and HTTP bodies are streamed here first, then handed to
 * `ingestMessage` as `{path, size}` and removed afterwards.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { open, readdir, unlink } from "node:fs/promises";
import { join } from "node:path";
import { pidAlive } from "../lib/process.ts";

/** A spooled message on disk. `exceeded` means bytes over `limit` arrived and were not written. */
export interface SpoolFile {
  path: string;
  /** bytes received (all of them, also past the limit) */
  size: number;
  exceeded: boolean;
  /** lowercase hex SHA-256 of the bytes written, hashed on the way in (absent when `exceeded`) */
  sha256?: string;
  /** the bytes themselves, kept when `keepBytes` allowed it: no need to read the file back */
  bytes?: Uint8Array;
}

/** Options of {@link spoolStream}. */
export interface SpoolOptions {
  /** largest size kept; beyond it nothing more is written */
  limit: number;
  /**
   * What to do past the limit: "drain" keeps reading (and dropping) to the end — SMTP must consume
   * the DATA stream before it can reply (RFC 5321 §4.1.1.4) —, "stop" stops reading at once (HTTP).
   */
  overflow: "drain" | "stop";
  /**
   * Also keep a copy of the bytes in memory when the message is at most this large (they are written
   * to disk all the same). Small messages are parsed from memory anyway; this spares reading them back.
   */
  keepBytes?: number;
}

/** The spool directory of this data dir, created on first use. */
export function spoolDir(dataDir: string): string {
  const dir = join(dataDir, "spool");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

/** A fresh, unique path in the spool directory (pid + random, so processes sharing DATA_DIR don't collide). */
export function spoolPath(dir: string): string {
  return join(dir, `${process.pid}-${Date.now()}-${randomBytes(8).toString("hex")}.eml`);
}

/**
 * Streams `source` (a Node readable or a web ReadableStream) into a new spool file, awaiting each write
 * so a slow disk back-pressures the sender. On any error the file is removed and the error rethrown.
 */
export async function spoolStream(
  source: AsyncIterable<Uint8Array | string>,
  dir: string,
  opts: SpoolOptions,
): Promise<SpoolFile> {
  const path = spoolPath(dir);
  const fh = await open(path, "wx", 0o600);
  let size = 0;
  let exceeded = false;
  const hasher = new Bun.CryptoHasher("sha256");
  const keep = opts.keepBytes ?? 0;
  let kept: Uint8Array[] | null = keep > 0 ? [] : null;
  try {
    try {
      for await (const chunk of source) {
        const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
        size += bytes.byteLength;
        if (size > opts.limit) {
          exceeded = true;
          if (opts.overflow === "stop") break;
          continue;
        }
        hasher.update(bytes);
        if (kept !== null) {
          if (size > keep) kept = null;
          else kept.push(new Uint8Array(bytes));
        }
        await fh.write(bytes);
      }
    } finally {
      await fh.close();
    }
  } catch (err) {
    await removeSpoolFile(path);
    throw err;
  }
  if (exceeded) return { path, size, exceeded };
  const sha256 = hasher.digest("hex");
  return kept === null
    ? { path, size, exceeded, sha256 }
    : { path, size, exceeded, sha256, bytes: concat(kept, size) };
}

function concat(chunks: Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1 && chunks[0] !== undefined) return chunks[0];
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/** Removes a spool file; a missing file is not an error. */
export async function removeSpoolFile(path: string): Promise<void> {
  await unlink(path).catch(() => undefined);
}

/**
 * Removes spool files left by processes that are gone (SIGKILL, OOM, power loss: their `finally`
 * never ran). A file's writer is the pid its name starts with; files of live processes — this one,
 * or others sharing DATA_DIR — are kept. Run when an intake starts. Returns how many were removed.
 */
export async function sweepSpool(dir: string, isAlive: (pid: number) => boolean = pidAlive): Promise<number> {
  let removed = 0;
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const pid = Number(/^(\d+)-.*\.eml$/.exec(name)?.[1]);
    if (!Number.isSafeInteger(pid) || pid <= 0 || isAlive(pid)) continue;
    await removeSpoolFile(join(dir, name));
    removed++;
  }
  return removed;
}
