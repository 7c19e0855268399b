/** `bun run serve` as a user runs it: starts on the embedded default, answers, shuts down on SIGTERM. */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "../..");

async function readUntil(
  stream: ReadableStream<Uint8Array>,
  pattern: RegExp,
  timeoutMs: number,
): Promise<string> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const chunk = await Promise.race([
      reader.read(),
      Bun.sleep(Math.max(0, deadline - Date.now())).then(() => ({ done: true, value: undefined })),
    ]);
    if (chunk.value) text += decoder.decode(chunk.value);
    if (pattern.test(text) || chunk.done) break;
  }
  reader.releaseLock();
  return text;
}

/** `bun services/main.ts serve` with the embedded default and ephemeral ports, plus `env`. */
function serve(env: Record<string, string>) {
  return Bun.spawn(["bun", "services/main.ts", "serve"], {
    cwd: ROOT,
    env: { ...process.env, PORT: "0", SMTP_PORT: "0", LOG_LEVEL: "info", DATABASE_URL: "", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
}

/** Runs `fn` with a fresh temp directory, removed afterwards. */
async function inTempDir<T>(prefix: string, fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  try {
    return await fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A start-up that is expected to stop: its exit status and stderr. */
async function failedStart(env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  const proc = serve(env);
  const code = await proc.exited;
  return { code, stderr: await new Response(proc.stderr).text() };
}

describe("bun run serve", () => {
  test("starts on PGlite, prints where it listens and the setup token file, serves OpenAPI, stops on SIGTERM", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "mh-serve-"));
    const proc = serve({ DATA_DIR: dataDir });
    try {
      const out = await readUntil(proc.stdout, /"msg":"http api listening".*\n/, 60_000);
      const line = out.split("\n").find((l) => l.includes("http api listening"));
      expect(line, out).toBeDefined();
      const url = JSON.parse(line as string).url as string;
      expect(out).toContain(join(dataDir, "setup-token"));
      expect(statSync(join(dataDir, "setup-token")).mode & 0o777).toBe(0o600);
      const res = await fetch(`${url}/v1/openapi.json`);
      expect(res.status).toBe(200);
      const doc = (await res.json()) as { openapi: string };
      expect(doc.openapi).toStartWith("3.1");
      const token = (await Bun.file(join(dataDir, "setup-token")).text()).trim();
      const created = await fetch(`${url}/v1/admin/projects`, {
        method: "POST",
        headers: { "x-setup-token": token, "content-type": "application/json" },
        body: JSON.stringify({ name: "via serve" }),
      });
      expect(created.status).toBe(201);
      // A second `serve` on the same DATA_DIR would corrupt the embedded database: it refuses to start.
      const second = await failedStart({ DATA_DIR: dataDir });
      expect(second.code).toBe(75);
      const refusal = second.stderr;
      expect(refusal).toContain(`in use by process ${proc.pid}`);
      expect((await fetch(`${url}/v1/openapi.json`)).status).toBe(200); // the first one is unharmed
      proc.kill("SIGTERM");
      expect(await proc.exited).toBe(0);
      expect(existsSync(join(dataDir, "pg"))).toBe(true);
      expect(existsSync(join(dataDir, "pg.lock"))).toBe(false);
    } finally {
      proc.kill("SIGKILL");
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 90_000);

  test("a port in use stops start-up with one clear line (HTTP and SMTP), and releases the embedded database", async () => {
    const taken = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("taken") });
    const dataDir = mkdtempSync(join(tmpdir(), "mh-serve-port-"));
    try {
      for (const [vars, what] of [
        [{ PORT: String(taken.port), SMTP_PORT: "0" }, "HTTP API"],
        [{ PORT: "0", SMTP_PORT: String(taken.port) }, "SMTP listener"],
      ] as const) {
        const { code, stderr } = await failedStart({
          DATA_DIR: dataDir,
          HOST: "127.0.0.1",
          SMTP_HOST: "127.0.0.1",
          ...vars,
        });
        expect(code).toBe(75);
        expect(stderr).toContain(
          `cannot start the ${what} on 127.0.0.1:${taken.port}: the address is in use`,
        );
        expect(stderr).not.toContain("    at ");
        expect(existsSync(join(dataDir, "pg.lock"))).toBe(false);
      }
    } finally {
      taken.stop(true);
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  test(
    "a HOST that is not an address of this machine stops start-up with one line and exit 78",
    () =>
      inTempDir("mh-serve-host-", async (dataDir) => {
        // 192.0.2.1 is TEST-NET-1 (RFC 5737): never an address of a real machine.
        const { code, stderr } = await failedStart({ DATA_DIR: dataDir, HOST: "192.0.2.1" });
        expect(code).toBe(78);
        expect(stderr).toContain(
          "cannot start the HTTP API on 192.0.2.1:0: that host is not an address of this machine",
        );
        expect(stderr).not.toContain("    at ");
      }),
    30_000,
  );

  test(
    "a DATA_DIR that cannot be created stops start-up with one line and exit 73",
    () =>
      inTempDir("mh-serve-dd-", async (dir) => {
        const file = join(dir, "a-file");
        await Bun.write(file, "not a directory");
        const { code, stderr } = await failedStart({ DATA_DIR: join(file, "data") });
        expect(code).toBe(73);
        expect(stderr).toContain(`DATA_DIR ${join(file, "data")} cannot be used: ENOTDIR`);
        expect(stderr).not.toContain("    at ");
      }),
    30_000,
  );

  test("a Postgres that is missing, unreachable or refusing is one clear line and exit 69 (password never shown)", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "mh-serve-pg-"));
    const free = Bun.serve({ port: 0, fetch: () => new Response("") });
    const closedPort = free.port;
    free.stop(true);
    const admin = new URL(process.env.TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres");
    const start = (url: string) =>
      failedStart({ DATA_DIR: dataDir, DATABASE_URL: url, DATABASE_WAIT_S: "1" });
    try {
      const missing = new URL(admin);
      missing.pathname = "/mailhook_no_such_db";
      const a = await start(missing.toString());
      expect(a.code).toBe(69);
      expect(a.stderr).toContain("does not exist: create it (createdb) or fix DATABASE_URL");

      const unreachable = await start(`postgres://postgres:hunter2@127.0.0.1:${closedPort}/x`);
      expect(unreachable.code).toBe(69);
      expect(unreachable.stderr).toContain("waiting for Postgres (attempt 1)");
      expect(unreachable.stderr).toContain(
        `cannot reach Postgres at postgres://postgres@127.0.0.1:${closedPort}/x`,
      );
      expect(unreachable.stderr).not.toContain("hunter2");

      const role = new URL(admin);
      role.username = "mailhook_no_such_role";
      const refused = await start(role.toString());
      expect(refused.code).toBe(69);
      expect(refused.stderr).toContain("refused the connection");
      for (const r of [a, unreachable, refused]) expect(r.stderr).not.toContain("    at ");
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  test("a bad configuration stops start-up naming each bad variable", async () => {
    const { code, stderr: err } = await failedStart({ PORT: "nope", RETRY_SCHEDULE: "later" });
    expect(code).toBe(78);
    expect(err).toContain("PORT");
    expect(err).toContain("RETRY_SCHEDULE");
  });
});
