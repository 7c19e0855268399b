/**
 * The embedded database's directory lock: PGlite takes none, and a second process opening the same
 * directory corrupts the first's data. `openDatabase` holds `DIR.lock` (the holder's PID) while open.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseLockedError, openDatabase } from "../../services/db/client.ts";

const dirs: string[] = [];
function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "mh-pglock-"));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A PID that no process has: one that just exited. */
async function deadPid(): Promise<number> {
  const p = Bun.spawn(["true"]);
  await p.exited;
  return p.pid;
}

describe("embedded database lock", () => {
  // No lock yet; a stale one (its process is gone: a crash, a kill -9); one naming this very process (a
  // restarted container reusing the PID). Each time open takes the lock and close removes it.
  const cases: [string, () => Promise<string | null>][] = [
    ["no lock", async () => null],
    ["a stale lock", async () => String(await deadPid())],
    ["a lock naming this process", async () => String(process.pid)],
  ];
  test.each(cases)(
    "%s: open holds DATA_DIR/pg.lock with this PID; close removes it",
    async (_, before) => {
      const dir = dataDir();
      const lock = join(dir, "pg.lock");
      const content = await before();
      if (content !== null) writeFileSync(lock, content);
      const database = await openDatabase({ databaseUrl: null, dataDir: dir });
      expect(readFileSync(lock, "utf8")).toBe(String(process.pid));
      await database.close();
      expect(existsSync(lock)).toBe(false);
    },
    30_000,
  );

  test("a lock held by another live process refuses to open, naming the process and the lock file", async () => {
    const dir = dataDir();
    const lock = join(dir, "pg.lock");
    writeFileSync(lock, "1"); // PID 1 always runs and is never this test
    const err = await openDatabase({ databaseUrl: null, dataDir: dir }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DatabaseLockedError);
    expect((err as DatabaseLockedError).code).toBe("database.locked");
    expect((err as Error).message).toContain("in use by process 1");
    expect((err as Error).message).toContain(lock);
    expect(readFileSync(lock, "utf8")).toBe("1"); // left alone
    expect(existsSync(join(dir, "pg", "PG_VERSION"))).toBe(false); // PGlite never opened
  });
});
