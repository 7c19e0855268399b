// The role list and its start/stop order, with fake roles (the real ones are started by
// test/integration/serve.test.ts and quickstart.test.ts).
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AppContext } from "../../services/context.ts";
import { spoolDir } from "../../services/ingest/spool.ts";
import { silentLogger } from "../../services/lib/logger.ts";
import { SOURCE_TYPES } from "../../services/lib/message.ts";
import { ALL_ROLES, ROLES, type RoleDefinition, startRoleList } from "../../services/roles.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A context with a fresh DATA_DIR holding one stale spool file (of a pid that cannot exist). */
function contextWithStaleSpool(): { ctx: AppContext; stale: string } {
  const dataDir = mkdtempSync(join(tmpdir(), "mh-roles-"));
  dirs.push(dataDir);
  const spool = spoolDir(dataDir);
  mkdirSync(spool, { recursive: true });
  const stale = join(spool, "2147483646-1-aa.eml");
  writeFileSync(stale, "left by a killed process");
  // (the search indexer beside intake roles reads the group commit's counters; it never ticks here)
  const ingest = { commits: { stats: { batches: 0, statements: 0, retried: 0 } } };
  return {
    ctx: { config: { dataDir }, blobs: {}, logger: silentLogger, ingest } as unknown as AppContext,
    stale,
  };
}

/** A role that logs its start and stop into `log`, failing to start when asked. */
function fakeRole(name: string, intake: boolean, log: string[], failStart = false): RoleDefinition {
  return {
    name,
    intake,
    async start() {
      if (failStart) throw new Error(`${name} cannot start`);
      log.push(`start ${name}`);
      return {
        port: name.length,
        async stop() {
          log.push(`stop ${name}`);
        },
      };
    },
  };
}

async function until(probe: () => boolean, what: string, timeoutMs = 2_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(5);
  }
}

describe("the role list", () => {
  test("serve runs every role, api, smtp and imap take mail in, the worker does not", () => {
    expect(ALL_ROLES).toEqual(["api", "smtp", "imap", "worker"]);
    expect(ROLES.map((r) => [r.name, r.intake])).toEqual([
      ["api", true],
      ["smtp", true],
      ["imap", true],
      ["worker", false],
    ]);
  });

  test("every intake role is named by the source type its messages are stored with", () => {
    const sources: readonly string[] = SOURCE_TYPES;
    for (const role of ROLES.filter((r) => r.intake)) expect(sources).toContain(role.name);
  });
});

describe("startRoleList", () => {
  test("starts in list order and stops intake roles first, whatever their place in the list", async () => {
    const log: string[] = [];
    const { ctx } = contextWithStaleSpool();
    const running = await startRoleList(ctx, [
      fakeRole("worker", false, log),
      fakeRole("api", true, log),
      fakeRole("poller", true, log),
    ]);
    expect(running.get("poller")?.port).toBe(6);
    await running.stop();
    expect(log).toEqual([
      "start worker",
      "start api",
      "start poller",
      "stop api",
      "stop poller",
      "stop worker",
    ]);
  });

  test("a role that fails to start stops the ones already started, and its error is rethrown", async () => {
    const log: string[] = [];
    const { ctx } = contextWithStaleSpool();
    const roles = [
      fakeRole("worker", false, log),
      fakeRole("api", true, log),
      fakeRole("smtp", true, log, true),
    ];
    await expect(startRoleList(ctx, roles)).rejects.toThrow("smtp cannot start");
    expect(log).toEqual(["start worker", "start api", "stop api", "stop worker"]);
  });

  test("stale spool files are swept when an intake role starts", async () => {
    const { ctx, stale } = contextWithStaleSpool();
    const running = await startRoleList(ctx, [fakeRole("smtp", true, [])]);
    await until(() => !existsSync(stale), "the spool sweep");
    await running.stop();
  });

  test("a process without intake roles leaves the spool alone", async () => {
    const { ctx, stale } = contextWithStaleSpool();
    const running = await startRoleList(ctx, [fakeRole("worker", false, [])]);
    // An absence cannot be polled for: give a sweep that wrongly started the time it takes above.
    await Bun.sleep(50);
    expect(existsSync(stale)).toBe(true);
    await running.stop();
  });
});
