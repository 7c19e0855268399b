/**
 * `DATA_DIR` holds every stored message (the embedded database, blobs, the spool), the secrets key and
 * the setup token, so everything in it is private to the service's user: directories 0700, files 0600
 * (docs/operations.md#the-data-directory). Three mechanisms keep it so:
 * - the process umask ({@link PRIVATE_UMASK}), set once at start-up before anything is created, strips
 *   group and other bits from every file and directory the process creates afterwards, whatever mode
 *   the creating code asked for;
 * - {@link privateMode} for the one writer that sets modes with chmod(2), which ignores the umask (the
 *   embedded database, services/db/pglite-fs.ts);
 * - {@link tightenTree} at start-up, for a directory created by an older version or opened up by hand.
 *
 * Invariants of the walk: it never follows a symbolic link (a link inside the tree is left alone, and
 * so is whatever it points to), it only ever removes permissions (an entry already without group and
 * other bits is not touched), and it never throws for an entry: what it cannot read or change is
 * reported, so a volume owned by another user does not stop start-up.
 */
import { chmodSync, type Dirent, lstatSync, readdirSync, realpathSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "./logger.ts";

/** The umask that makes every new file 0600 and every new directory 0700 (from 0666 / 0777). */
export const PRIVATE_UMASK = 0o077;
/** What {@link tightenTree} sets a file with group or other bits to. */
export const PRIVATE_FILE_MODE = 0o600;
/** What {@link tightenTree} sets a directory with group or other bits to. */
export const PRIVATE_DIR_MODE = 0o700;
/** Group and other permissions, plus setuid, setgid and sticky: none belongs on a private entry. */
const NOT_PRIVATE = 0o7077;

/**
 * Sets the process umask to {@link PRIVATE_UMASK}. Process-wide: call it once, at start-up of a
 * service process, before the data directory is created or opened (never from a library or a test).
 */
export function usePrivateUmask(): void {
  process.umask(PRIVATE_UMASK);
}

/** `mode` (a file-type-and-permission word as chmod takes it) without group and other bits. */
export function privateMode(mode: number): number {
  return mode & ~NOT_PRIVATE;
}

/** One entry the walk could not read or change. */
export interface TightenFailure {
  path: string;
  /** the errno code (`EPERM`, `EACCES`, …) or the error's name */
  code: string;
  message: string;
}

/** Changes a path's mode (`fs.chmodSync`; tests pass one that fails as a foreign-owned volume does). */
export type Chmod = (path: string, mode: number) => void;

/** What {@link tightenTree} did. */
export interface TightenResult {
  /** the directory walked (the real path, when the root given was a symbolic link) */
  root: string;
  /** entries whose mode was changed */
  tightened: number;
  /** symbolic links left alone (neither followed nor changed) */
  symlinksSkipped: number;
  failures: TightenFailure[];
  /** why the walk did not run at all (the root is missing, not a directory, or a shared directory) */
  refused?: string;
}

function failure(path: string, err: unknown): TightenFailure {
  const e = err as NodeJS.ErrnoException;
  return { path, code: e.code ?? e.name ?? "Error", message: e.message ?? String(err) };
}

const isGone = (err: unknown): boolean => (err as NodeJS.ErrnoException).code === "ENOENT";

/**
 * Makes every directory under `root` (and `root` itself) 0700 and every regular file 0600, where it
 * has any group or other bit. Symbolic links are neither followed nor changed; `root` itself may be one
 * (a data directory on another volume), and then its target is walked. Sockets, FIFOs and devices are
 * left alone. Entries that vanish during the walk (a spool file finishing) are skipped silently.
 *
 * A root with the sticky bit is a shared directory such as /tmp, never a data directory of its own:
 * it is refused without touching anything (`refused`).
 */
export function tightenTree(root: string, chmod: Chmod = chmodSync): TightenResult {
  const result: TightenResult = { root, tightened: 0, symlinksSkipped: 0, failures: [] };
  let top: string;
  try {
    top = realpathSync(root);
    result.root = top;
    const st = statSync(top);
    if (!st.isDirectory()) {
      result.refused = `${root} is not a directory`;
      return result;
    }
    if (st.mode & 0o1000) {
      result.refused = `${root} is a shared directory (sticky bit set); use a directory of its own`;
      return result;
    }
  } catch (err) {
    result.refused = `${root} cannot be read: ${(err as Error).message}`;
    return result;
  }
  const pending: string[] = [top];
  tightenEntry(top, result, chmod);
  for (let dir = pending.pop(); dir !== undefined; dir = pending.pop()) {
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch (err) {
      if (!isGone(err)) result.failures.push(failure(dir, err));
      continue;
    }
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isSymbolicLink()) {
        result.symlinksSkipped++;
        continue;
      }
      if (!entry.isDirectory() && !entry.isFile()) continue;
      // Checked again on the entry itself (lstat never follows). A directory whose own mode could not
      // be changed is still walked: what the service created inside it is its own to tighten.
      if (tightenEntry(path, result, chmod)) pending.push(path);
    }
  }
  return result;
}

/**
 * Tightens one entry (by lstat, so a link swapped in since the listing is seen as a link and left
 * alone). Returns whether the walk should go on below it: whether it is a directory.
 */
function tightenEntry(path: string, result: TightenResult, chmod: Chmod): boolean {
  let mode: number;
  let isDir: boolean;
  try {
    const st = lstatSync(path);
    if (st.isSymbolicLink()) {
      result.symlinksSkipped++;
      return false;
    }
    if (!st.isDirectory() && !st.isFile()) return false;
    mode = st.mode;
    isDir = st.isDirectory();
  } catch (err) {
    if (!isGone(err)) result.failures.push(failure(path, err));
    return false;
  }
  if ((mode & NOT_PRIVATE) === 0) return isDir;
  try {
    chmod(path, isDir ? PRIVATE_DIR_MODE : PRIVATE_FILE_MODE);
    result.tightened++;
  } catch (err) {
    if (!isGone(err)) result.failures.push(failure(path, err));
  }
  return isDir;
}

/** How many unchangeable paths {@link makeDataDirPrivate} names one by one before summing up. */
const WARNINGS_NAMED = 10;

/**
 * The start-up step: {@link tightenTree} on `DATA_DIR`, logged. One info line `data directory made
 * private` with the count when anything was changed (nothing when all was private already); one warning
 * per path that could not be changed (up to {@link WARNINGS_NAMED}, then one line with the rest's
 * count) — a volume owned by another user is reported, never fatal.
 */
export function makeDataDirPrivate(dataDir: string, logger: Logger, chmod: Chmod = chmodSync): TightenResult {
  const result = tightenTree(dataDir, chmod);
  if (result.refused !== undefined) {
    logger.warn("data directory permissions left unchanged", { dir: dataDir, reason: result.refused });
    return result;
  }
  if (result.tightened > 0) {
    logger.info("data directory made private", { dir: result.root, tightened: result.tightened });
  }
  for (const f of result.failures.slice(0, WARNINGS_NAMED)) {
    logger.warn("cannot make private", { path: f.path, code: f.code, error: f.message });
  }
  if (result.failures.length > WARNINGS_NAMED) {
    logger.warn("cannot make private: more paths", {
      dir: result.root,
      more: result.failures.length - WARNINGS_NAMED,
    });
  }
  return result;
}
