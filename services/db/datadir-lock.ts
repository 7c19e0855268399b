/**
 * The embedded database's directory lock. PGlite takes no lock of its own, so while a process has
 * `DIR` open it holds `DIR.lock`, which names it as `<pid> <hostname>` and is refreshed by a heartbeat;
 * another process opening the same directory fails with {@link DatabaseLockedError} instead of
 * corrupting it. The rules (when a lock is live, when it may be taken over) are on {@link isLive} and
 * {@link lockDataDir}; docs/operations.md describes them for operators.
 *
 * Invariants: the lock file only ever appears complete (written to a temp file, then hard-linked into
 * place, which fails if it exists); releasing removes the lock file only if it still names this
 * process (one taken over meanwhile stays); the heartbeat timer is unref'd, so holding a lock never
 * keeps a process alive.
 */
import { linkSync, readFileSync, statSync, unlinkSync, utimesSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { pidAlive } from "../lib/process.ts";

/** The embedded database's directory is open in another live process (see {@link lockDataDir}). */
export class DatabaseLockedError extends Error {
  readonly code = "database.locked";
  constructor(
    readonly dir: string,
    readonly holder: string,
    readonly lockPath: string,
  ) {
    super(
      `the embedded database in ${dir} is in use by ${holder}: stop that process first ` +
        `(or set DATABASE_URL to share a Postgres database); if no mailhook runs there, remove ${lockPath}`,
    );
    this.name = "DatabaseLockedError";
  }
}

/** How often the holder refreshes its lock file's mtime, and after how long without it the lock is dead. */
export const LOCK_HEARTBEAT_MS = 5_000;
export const LOCK_STALE_MS = 30_000;

interface LockHolder {
  pid: number;
  /** `os.hostname()` of the holder: in a container, the container's own name */
  host: string | null;
  ageMs: number;
}

function readHolder(lockPath: string): LockHolder | null {
  try {
    const [pid = "", host] = readFileSync(lockPath, "utf8").trim().split(" ");
    return {
      pid: Number.parseInt(pid, 10),
      host: host ?? null,
      ageMs: Date.now() - statSync(lockPath).mtimeMs,
    };
  } catch {
    return null; // released in between
  }
}

/** "process 12" on this host, "process 12 on web-2" on another. */
function describeHolder(holder: LockHolder, me: string): string {
  return `process ${holder.pid}${holder.host && holder.host !== me ? ` on ${holder.host}` : ""}`;
}

/**
 * Whether a lock file still belongs to a running process. On this host (same hostname), by its PID: a
 * dead PID is stale, and so is this process's own PID (a restarted container often gets the old one's
 * PID, and one process does not open a directory twice). Written by another host (another container
 * sharing the volume), the PID says nothing here, so by the heartbeat: a holder refreshes the file every
 * {@link LOCK_HEARTBEAT_MS}, and one silent for {@link LOCK_STALE_MS} is gone. An old lock with no host
 * (written before the host was recorded) counts as this host's.
 */
function isLive(holder: LockHolder, me: string): boolean {
  if (holder.host !== null && holder.host !== me) return holder.ageMs < LOCK_STALE_MS;
  if (!(holder.pid > 0) || holder.pid === process.pid) return false;
  return pidAlive(holder.pid);
}

/**
 * PGlite takes no lock of its own: a second process opening the same directory reads a stale copy and
 * its writes and checkpoints corrupt the first one's (measured: the second saw none of the first's
 * rows). `DIR.lock` holds `<pid> <hostname>` of the process that has it open. It appears complete and
 * exclusively (a temp file hard-linked into place), is refreshed every {@link LOCK_HEARTBEAT_MS}, and is
 * taken over only when {@link isLive} says its holder is gone. Taking over a stale lock races with
 * another process doing the same, so the winner re-reads the file after a pause before going on.
 * Returns the release function.
 */
export async function lockDataDir(dir: string, heartbeatMs = LOCK_HEARTBEAT_MS): Promise<() => void> {
  const lockPath = `${dir}.lock`;
  const me = hostname();
  const mine = `${process.pid} ${me}`;
  const temp = `${lockPath}.${process.pid}.${Date.now()}`;
  writeFileSync(temp, mine, { mode: 0o600 });
  try {
    let tookOver = false;
    for (let attempt = 1; attempt <= 3; attempt++) {
      try {
        linkSync(temp, lockPath);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
        const holder = readHolder(lockPath);
        if (holder === null) continue; // released in between: try again
        if (isLive(holder, me)) throw new DatabaseLockedError(dir, describeHolder(holder, me), lockPath);
        try {
          unlinkSync(lockPath); // stale: its holder is gone
          tookOver = true;
        } catch {
          // another process took it over first; the next round decides
        }
        continue;
      }
      if (tookOver) {
        // Two processes taking over the same stale lock can both get here: the later link wins. Both
        // wait long enough for the other's unlink-and-link to have happened, then check.
        await Bun.sleep(100);
        if (readFileSync(lockPath, "utf8") !== mine) {
          const holder = readHolder(lockPath);
          throw new DatabaseLockedError(
            dir,
            holder ? describeHolder(holder, me) : "another process",
            lockPath,
          );
        }
      }
      const beat = setInterval(() => {
        try {
          const now = new Date();
          utimesSync(lockPath, now, now);
        } catch {
          // removed by hand: nothing to refresh
        }
      }, heartbeatMs);
      beat.unref();
      return () => {
        clearInterval(beat);
        try {
          if (readFileSync(lockPath, "utf8") === mine) unlinkSync(lockPath);
        } catch {
          // already gone
        }
      };
    }
    throw new DatabaseLockedError(
      dir,
      "another process (the lock could not be taken in three tries)",
      lockPath,
    );
  } finally {
    try {
      unlinkSync(temp);
    } catch {
      // not created
    }
  }
}
