/**
 * The embedded database's directory lock: PGlite takes none, and a second process opening the same
 * directory corrupts the first's data. `openDatabase` holds `DIR.lock` (`<pid> <hostname>`) while open,
 * refreshed by a heartbeat; see `lockDataDir` in services/db/datadir-lock.ts for the rules.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseLockedError, LOCK_STALE_MS, openDatabase } from "../../services/db/client.ts";

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

const mine = () => `${process.pid} ${hostname()}`;

/** Writes a lock file with `content` whose last refresh was `ageMs` ago. */
function lockWith(dir: string, content: string, ageMs = 0): string {
  const lock = join(dir, "pg.lock");
  writeFileSync(lock, content);
  const at = new Date(Date.now() - ageMs);
  utimesSync(lock, at, at);
  return lock;
}

async function refusal(dir: string): Promise<DatabaseLockedError> {
  const err = await openDatabase({ databaseUrl: null, dataDir: dir }).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(DatabaseLockedError);
  return err as DatabaseLockedError;
}

describe("embedded database lock", () => {
  // Taken over: no lock yet; a stale one of this host (its process is gone: a crash, a kill -9); one
  // naming this very process (a restarted container reusing the PID); one from another host (a container
  // sharing the volume) whose heartbeat stopped; an old one without a host. Each time open takes the
  // lock and close removes it.
  const cases: [string, () => Promise<string | null>, number][] = [
    ["no lock", async () => null, 0],
    ["a dead process of this host", async () => `${await deadPid()} ${hostname()}`, 0],
    ["this process's own PID", async () => mine(), 0],
    [
      "another host, silent for longer than the stale limit",
      async () => "1 other-host",
      LOCK_STALE_MS + 5000,
    ],
    ["an old lock without a host, dead PID", async () => String(await deadPid()), 0],
  ];
  test.each(cases)(
    "%s: open takes DATA_DIR/pg.lock; close removes it",
    async (_, before, ageMs) => {
      const dir = dataDir();
      const lock = join(dir, "pg.lock");
      const content = await before();
      if (content !== null) lockWith(dir, content, ageMs);
      const database = await openDatabase({ databaseUrl: null, dataDir: dir });
      expect(readFileSync(lock, "utf8")).toBe(mine());
      await database.close();
      expect(existsSync(lock)).toBe(false);
    },
    30_000,
  );

  test("a live process of this host keeps it: open refuses, naming the process and the lock file", async () => {
    const dir = dataDir();
    const lock = lockWith(dir, `1 ${hostname()}`); // PID 1 always runs and is never this test
    const err = await refusal(dir);
    expect(err.code).toBe("database.locked");
    expect(err.message).toContain("in use by process 1:");
    expect(err.message).toContain(lock);
    expect(readFileSync(lock, "utf8")).toBe(`1 ${hostname()}`); // left alone
    expect(existsSync(join(dir, "pg", "PG_VERSION"))).toBe(false); // PGlite never opened
  });

  test("another host's lock with a recent heartbeat is kept, whatever its PID (two containers, one volume)", async () => {
    const dir = dataDir();
    lockWith(dir, `${process.pid} other-host`, 2000);
    const err = await refusal(dir);
    expect(err.message).toContain(`in use by process ${process.pid} on other-host`);
  });

  test("the holder refreshes the lock while it runs, so other hosts see it alive", async () => {
    const dir = dataDir();
    const database = await openDatabase({ databaseUrl: null, dataDir: dir, lockHeartbeatMs: 50 });
    try {
      const lock = join(dir, "pg.lock");
      const old = new Date(Date.now() - 60_000);
      utimesSync(lock, old, old);
      await Bun.sleep(300);
      expect(Date.now() - statSync(lock).mtimeMs).toBeLessThan(5000);
    } finally {
      await database.close();
    }
  }, 30_000);
});
