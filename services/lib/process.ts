/** Facts about other processes on this host. */

/**
 * Whether a process with this pid exists on this host (`kill(pid, 0)` sends nothing; EPERM means it
 * exists but belongs to another user). Used to tell files of crashed writers from live ones, and the
 * embedded database's lock file of a crashed holder from a live one (db/datadir-lock.ts).
 */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
