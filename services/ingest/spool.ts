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
        await fh.write(bytes);
      }
    } finally {
      await fh.close();
    }
  } catch (err) {
    await removeSpoolFile(path);
    throw err;
  }
  return { path, size, exceeded };
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
