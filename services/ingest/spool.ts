/**
 * Spooling raw messages to disk (`DATA_DIR/spool`) so that intake never holds a whole message in
 * memory per connection: SMTP DATA and HTTP bodies are streamed here first, then handed to
 * `ingestMessage` as `{path, size}` and removed afterwards.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { type FileHandle, open, readdir, unlink } from "node:fs/promises";
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
  /** false when nothing was written to the file (`deferBytes`): only `bytes` holds the message */
  written?: boolean;
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
  /**
   * Write nothing to the file while the message is at most this large (at most `keepBytes`): its bytes
   * are only held in memory, and written out, all of them, once it grows past this. A message that
   * ends under it never touches the file (`written: false`), whose contents are then stale and must
   * not be read: such a message is used through `bytes` only. For SMTP, where a small message's spool
   * write was a syscall per chunk that nothing ever read back.
   */
  deferBytes?: number;
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
 * A spool file that one SMTP connection reuses for message after message: each message is written over
 * the previous one from offset 0 (and the file cut to its size), so a connection creates one file, not
 * one per message. On this project's hot path (many small messages over few connections) creating a
 * file per message was the single largest cost: a new inode each time (ext4 scans its bitmap for one,
 * and scans far while recently deleted inodes are around). A slot is given up (its file removed) when
 * a message may have been moved out of it into the blob store, when spooling failed, and when the
 * connection closes.
 */
export class SpoolSlot {
  /** the open file and its path, or null before the first message / after `discard` */
  private file: { fh: FileHandle; path: string; length: number } | null = null;
  private busy = false;
  private closed = false;

  constructor(private readonly dir: string) {}

  /** Spools one message into the slot's file (see {@link spoolStream}). One message at a time. */
  async spool(source: AsyncIterable<Uint8Array | string>, opts: SpoolOptions): Promise<SpoolFile> {
    if (this.busy) throw new Error("spool slot in use");
    this.busy = true;
    try {
      if (this.file === null) {
        const path = spoolPath(this.dir);
        this.file = { fh: await open(path, "wx", 0o600), path, length: 0 };
      }
      const file = this.file;
      const spooled = await writeSpool(source, file.fh, file.path, opts);
      // Held in memory only: the file is as the previous message left it.
      if (spooled.written === false) return spooled;
      // The bytes past this message's end belong to a longer earlier one: cut them off.
      const written = Math.min(spooled.size, opts.limit);
      if (file.length > written) await file.fh.truncate(written);
      file.length = written;
      return spooled;
    } catch (err) {
      this.busy = false;
      await this.discard();
      this.released();
      throw err;
    }
  }

  /**
   * Ends the use of the file for one message. `keep` false: the message may have been moved out of the
   * file (a raw message large enough to go to the blob store is renamed there), so the slot starts a new
   * file next time.
   */
  async done(keep: boolean): Promise<void> {
    this.busy = false;
    if (!keep || this.closed) await this.discard();
    this.released();
  }

  /**
   * The connection is gone: remove the file now, or when the message in progress is done. Resolves
   * once the file is gone either way, so a graceful stop that waits for it leaves no file behind.
   */
  async close(): Promise<void> {
    this.closed = true;
    if (!this.busy) return this.discard();
    await new Promise<void>((resolve) => {
      this.released = () => {
        this.released = () => {};
        resolve();
      };
    });
  }

  /** Called when a message in progress ends (its file discarded if the slot was closed meanwhile). */
  private released: () => void = () => {};

  private async discard(): Promise<void> {
    const file = this.file;
    this.file = null;
    if (file === null) return;
    await file.fh.close().catch(() => undefined);
    await removeSpoolFile(file.path);
  }
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
  try {
    try {
      return await writeSpool(source, fh, path, opts);
    } finally {
      await fh.close();
    }
  } catch (err) {
    await removeSpoolFile(path);
    throw err;
  }
}

/**
 * Writes `source` from offset 0 of an open file, hashing on the way. Writes are positional, so a
 * reused file is overwritten in place; bytes past the new end are the caller's to cut.
 */
async function writeSpool(
  source: AsyncIterable<Uint8Array | string>,
  fh: FileHandle,
  path: string,
  opts: SpoolOptions,
): Promise<SpoolFile> {
  let size = 0;
  let exceeded = false;
  const hasher = new Bun.CryptoHasher("sha256");
  const keep = opts.keepBytes ?? 0;
  let kept: Uint8Array[] | null = keep > 0 ? [] : null;
  // Chunks held back from the file while the message is under `deferBytes`, and their size.
  const defer = Math.min(opts.deferBytes ?? 0, keep);
  let pending: Uint8Array[] | null = defer > 0 ? [] : null;
  let pendingSize = 0;
  for await (const chunk of source) {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    const at = size;
    size += bytes.byteLength;
    if (size > opts.limit) {
      exceeded = true;
      if (opts.overflow === "stop") break;
      continue;
    }
    hasher.update(bytes);
    const copy = kept !== null || pending !== null ? new Uint8Array(bytes) : bytes;
    if (kept !== null) {
      if (size > keep) kept = null;
      else kept.push(copy);
    }
    if (pending !== null) {
      if (size <= defer) {
        pending.push(copy);
        pendingSize = size;
        continue;
      }
      // Past it: write out what was held back, then go on writing as it comes.
      if (pendingSize > 0) await fh.write(concat(pending, pendingSize), 0, pendingSize, 0);
      pending = null;
    }
    await fh.write(bytes, 0, bytes.byteLength, at);
  }
  if (exceeded) {
    // An oversized message is refused: what was held back is never needed.
    return pending !== null ? { path, size, exceeded, written: false } : { path, size, exceeded };
  }
  const sha256 = hasher.digest("hex");
  if (pending !== null) return { path, size, exceeded, sha256, bytes: concat(pending, size), written: false };
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
