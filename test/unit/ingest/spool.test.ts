import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spoolPath, sweepSpool } from "../../../services/ingest/spool.ts";

describe("sweepSpool", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const fresh = () => {
    const d = mkdtempSync(join(tmpdir(), "mh-spool-"));
    dirs.push(d);
    return d;
  };

  test("removes the spool files of processes that are gone and keeps those of live ones", async () => {
    const dir = fresh();
    // Found by the crash suite (tools/chaos/crash.ts): a SIGKILLed serve left its spool files forever.
    writeFileSync(join(dir, "4242-1700000000000-00aa.eml"), "dead writer");
    writeFileSync(join(dir, "4343-1700000000000-00bb.eml"), "live writer");
    const mine = spoolPath(dir);
    writeFileSync(mine, "this process");
    writeFileSync(join(dir, "notes.txt"), "not a spool file");
    const removed = await sweepSpool(dir, (pid) => pid === 4343 || pid === process.pid);
    expect(removed).toBe(1);
    expect(readdirSync(dir).sort()).toEqual(
      ["4343-1700000000000-00bb.eml", mine.slice(dir.length + 1), "notes.txt"].sort(),
    );
  });

  test("by default checks pids on this host: a pid that cannot exist is swept, our own is kept", async () => {
    const dir = fresh();
    writeFileSync(join(dir, "2147483646-1-aa.eml"), "x");
    const mine = spoolPath(dir);
    writeFileSync(mine, "y");
    expect(await sweepSpool(dir)).toBe(1);
    expect(readdirSync(dir)).toEqual([mine.slice(dir.length + 1)]);
  });

  test("a missing directory sweeps nothing", async () => {
    expect(await sweepSpool(join(fresh(), "absent"))).toBe(0);
  });
});
