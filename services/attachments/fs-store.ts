/**
 * Filesystem blob store under `DATA_DIR/blobs` (README.md#configuration, the embedded default).
 *
 * Durability invariant: a blob's final path either does not exist or holds the complete bytes. Writes go
 * to a temp file in `root/.tmp` (same filesystem, so rename(2) is atomic), named after the writing
 * pid, are fsynced, renamed into place, and the directory is fsynced so the new entry survives a crash.
 * A process killed mid-write leaves its temp file; `sweepTemporaryFiles` (run when an intake starts)
 * removes those of dead pids — one flat directory, so the sweep never walks the fan-out tree.
 */
import { randomBytes } from "node:crypto";
import { type FileHandle, mkdir, open, readdir, rename, stat, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from "../lib/private-files.ts";
import { pidAlive } from "../lib/process.ts";
import {
  assertBlobKey,
  BlobNotFoundError,
  type BlobRef,
  type BlobStore,
  type ByteRange,
  refOfBytesKnown,
  refOfFile,
} from "./blob-store.ts";

/** Blobs are stored mail: private to the service's user, like all of DATA_DIR. */
const FILE_MODE = PRIVATE_FILE_MODE;
const DIR_MODE = PRIVATE_DIR_MODE;
/** Temp files of writes in progress, under `root` (no blob key starts with a dot). */
const TMP_DIR = ".tmp";

/** Blob store on the local filesystem; `root` is typically `DATA_DIR/blobs`. */
export class FsBlobStore implements BlobStore {
  readonly kind = "fs" as const;

  constructor(readonly root: string) {}

  /** Absolute path of a key's file; validates the key so no path escapes `root`. */
  pathOf(key: string): string {
    assertBlobKey(key);
    return join(this.root, key);
  }

  async put(bytes: Uint8Array, known?: BlobRef): Promise<BlobRef> {
    const ref = refOfBytesKnown(bytes, known);
    if (await this.hasComplete(ref)) return ref;
    await this.writeAtomically(ref, async (fh) => {
      await fh.writeFile(bytes);
    });
    return ref;
  }

  async putChunks(chunks: () => Iterable<Uint8Array>, ref: BlobRef): Promise<BlobRef> {
    if (await this.hasComplete(ref)) return ref;
    await this.writeAtomically(ref, async (fh) => {
      let size = 0;
      for (const chunk of chunks()) {
        await fh.write(chunk);
        size += chunk.byteLength;
      }
      if (size !== ref.size) throw new Error(`wrote ${size} bytes of a blob of ${ref.size}`);
    });
    return ref;
  }

  /**
   * Stores a copy of a file, streaming it (never loaded whole). Not part of `BlobStore`: the fallback of
   * {@link adoptFile} across filesystems, and the download bench. Two streamed passes: hash first (so a
   * duplicate is never written), then copy while re-hashing, and refuse to publish if the file changed
   * between passes.
   */
  async putFile(path: string): Promise<BlobRef> {
    const ref = await refOfFile(path);
    if (await this.hasComplete(ref)) return ref;
    await this.writeAtomically(ref, async (fh) => {
      const hasher = new Bun.CryptoHasher("sha256");
      for await (const chunk of Bun.file(path).stream()) {
        hasher.update(chunk);
        await fh.write(chunk);
      }
      if (hasher.digest("hex") !== ref.sha256) {
        throw new Error(`source file changed while being stored: ${path}`);
      }
    });
    return ref;
  }

  /**
   * Stores a file that is already on this filesystem (a spooled raw message) by renaming it into its
   * content-addressed place instead of copying it: fsync the file, rename, fsync the directory — the
   * same durability as {@link put}, without writing the bytes a second time. `ref` must be the
   * file's hash and size (computed by the caller while writing it). When the key is already stored
   * the file is removed (identical content is stored once). The file is consumed either way; across
   * filesystems (EXDEV) it is copied as by {@link putFile}.
   */
  async adoptFile(path: string, ref: BlobRef): Promise<BlobRef> {
    if (await this.hasComplete(ref)) {
      await unlink(path).catch(() => undefined);
      return ref;
    }
    const fh = await open(path, "r+");
    try {
      const size = (await fh.stat()).size;
      if (size !== ref.size) throw new Error(`file size ${size} is not the expected ${ref.size}: ${path}`);
      await fh.chmod(FILE_MODE);
      await fh.sync();
    } finally {
      await fh.close();
    }
    const finalPath = this.pathOf(ref.key);
    const dir = dirname(finalPath);
    const created = await mkdir(dir, { recursive: true, mode: DIR_MODE });
    try {
      await rename(path, finalPath);
    } catch (err) {
      if (!(typeof err === "object" && err !== null && "code" in err && err.code === "EXDEV")) throw err;
      const copied = await this.putFile(path);
      await unlink(path).catch(() => undefined);
      return copied;
    }
    await this.syncNewEntry(dir, created);
    return ref;
  }

  async stat(key: string): Promise<{ size: number } | null> {
    try {
      const s = await stat(this.pathOf(key));
      return { size: s.size };
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  /**
   * A lazy `Blob` slice of the file: nothing is read until the body is consumed, and Bun serves a
   * file-backed Blob with sendfile(2), so the bytes never pass through JS.
   */
  async read(key: string, range?: ByteRange): Promise<Blob> {
    const path = this.pathOf(key);
    if ((await this.stat(key)) === null) throw new BlobNotFoundError(key);
    const file = Bun.file(path);
    // Blob.slice takes an exclusive end; ByteRange.end is inclusive (RFC 9110 §14.1.2).
    return range ? file.slice(range.start, range.end + 1) : file;
  }

  async delete(key: string): Promise<void> {
    try {
      await unlink(this.pathOf(key));
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /**
   * Removes temp files whose writer (the pid their name starts with) is gone: writes cut short by
   * SIGKILL, OOM or power loss. Files of live processes sharing the store are kept. Returns the count.
   */
  async sweepTemporaryFiles(isAlive: (pid: number) => boolean = pidAlive): Promise<number> {
    const dir = join(this.root, TMP_DIR);
    let removed = 0;
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      const pid = Number(/^(\d+)-/.exec(name)?.[1]);
      if (!Number.isSafeInteger(pid) || pid <= 0 || isAlive(pid)) continue;
      await unlink(join(dir, name)).catch(() => undefined);
      removed++;
    }
    return removed;
  }

  /** Content addressing makes an existing file of the right size the same bytes, barring corruption. */
  private async hasComplete(ref: BlobRef): Promise<boolean> {
    const existing = await this.stat(ref.key);
    return existing !== null && existing.size === ref.size;
  }

  private async writeAtomically(ref: BlobRef, fill: (fh: FileHandle) => Promise<void>): Promise<void> {
    const finalPath = this.pathOf(ref.key);
    const dir = dirname(finalPath);
    const created = await mkdir(dir, { recursive: true, mode: DIR_MODE });
    const tmpDir = join(this.root, TMP_DIR);
    await mkdir(tmpDir, { recursive: true, mode: DIR_MODE });
    const tmpPath = join(
      tmpDir,
      `${process.pid}-${ref.sha256.slice(0, 8)}-${randomBytes(6).toString("hex")}`,
    );
    const fh = await open(tmpPath, "wx", FILE_MODE);
    try {
      try {
        await fill(fh);
        await fh.sync();
      } finally {
        await fh.close();
      }
      // Concurrent puts of the same content may both rename; each replaces identical bytes atomically.
      await rename(tmpPath, finalPath);
    } catch (err) {
      await unlink(tmpPath).catch(() => undefined);
      throw err;
    }
    await this.syncNewEntry(dir, created);
  }

  /**
   * Makes a new entry of `dir` durable, and `dir` itself with the fan-out directories above it when
   * mkdir just created them (`created` is the topmost one it made): fsync each parent up to its parent.
   */
  private async syncNewEntry(dir: string, created: string | undefined): Promise<void> {
    await fsyncDir(dir);
    if (created !== undefined) {
      const top = dirname(created);
      for (let d = dirname(dir); ; d = dirname(d)) {
        await fsyncDir(d);
        if (d === top || d === dirname(d)) break;
      }
    }
  }
}

async function fsyncDir(dir: string): Promise<void> {
  const dh = await open(dir, "r");
  try {
    await dh.sync();
  } finally {
    await dh.close();
  }
}

function isNotFound(err: unknown): boolean {
  return typeof err === "object" && err !== null && "code" in err && err.code === "ENOENT";
}
