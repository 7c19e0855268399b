/**
 * DATA_DIR is private to the service's user (docs/operations.md#the-data-directory), checked on the real
 * process: `bun services/main.ts serve` on the embedded database, a message with an attachment posted
 * over HTTP (so the spool, the blob store, the keys and PGlite all write), then every entry under
 * DATA_DIR is walked: directories 0700, files 0600, nothing else. The test process keeps the usual
 * umask 022, so what the service creates is private because of the service, not of its parent.
 * With Postgres (DATABASE_URL) DATA_DIR still holds the spool, the blobs and the keys.
 * The second test is the upgrade: a directory an older version left open is closed up at start-up.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, lstatSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openPglite } from "../../services/db/pglite.ts";
import { createTestDatabase, testDbKinds } from "../support/db.ts";
import { eventually } from "../support/eventually.ts";
import { buildMail } from "../support/raw-mail.ts";

const ROOT = join(import.meta.dir, "../..");

/** Every entry under `root` (root included, symlinks not followed) with its permission bits. */
function walk(root: string): { path: string; kind: "dir" | "file" | "link" | "other"; mode: number }[] {
  const out: { path: string; kind: "dir" | "file" | "link" | "other"; mode: number }[] = [];
  const visit = (path: string) => {
    const st = lstatSync(path);
    const kind = st.isSymbolicLink() ? "link" : st.isDirectory() ? "dir" : st.isFile() ? "file" : "other";
    out.push({ path: path.slice(root.length) || "/", kind, mode: st.mode & 0o7777 });
    if (kind === "dir") for (const name of readdirSync(path)) visit(join(path, name));
  };
  visit(root);
  return out;
}

/** The entries that are not private: a directory other than 0700, a file other than 0600, anything else. */
function notPrivate(root: string): string[] {
  return walk(root)
    .filter((e) => !((e.kind === "dir" && e.mode === 0o700) || (e.kind === "file" && e.mode === 0o600)))
    .map((e) => `${e.kind} ${e.path} ${e.mode.toString(8)}`);
}

/** `serve` on `dataDir` (and Postgres at `databaseUrl`, else PGlite) with ephemeral ports; resolves once it has started, with its URL and log so far. */
async function startServe(dataDir: string, databaseUrl = "") {
  const proc = Bun.spawn(["bun", "services/main.ts", "serve"], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: "0",
      SMTP_PORT: "0",
      LOG_LEVEL: "info",
      DATABASE_URL: databaseUrl,
    },
    stdout: "pipe",
    stderr: "pipe",
  });
  const log = { text: "" };
  void (async () => {
    for await (const chunk of proc.stdout) log.text += new TextDecoder().decode(chunk);
  })();
  // The worker starts last; its line means start-up is over and SIGTERM is a clean stop.
  await eventually(
    "serve to start",
    async () => {
      if (proc.exitCode !== null) throw new Error(`serve exited: ${await new Response(proc.stderr).text()}`);
      return log.text.includes('"msg":"delivery worker started"');
    },
    60_000,
    { everyMs: 50 },
  );
  const line = log.text.split("\n").find((l) => l.includes('"msg":"http api listening"')) ?? "{}";
  const url = JSON.parse(line).url as string;
  const stop = async () => {
    proc.kill("SIGTERM");
    expect(await proc.exited).toBe(0);
  };
  return { proc, url, log, stop };
}

/** The JSON log lines with message `msg`. */
function logLines(log: string, msg: string): Record<string, unknown>[] {
  return log
    .split("\n")
    .filter((l) => l.includes(`"msg":"${msg}"`))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe("DATA_DIR is private to the service's user", () => {
  test.each(testDbKinds())(
    "after serve (%s) stored a message with an attachment (spool, blobs, keys, database), every directory is 0700 and every file 0600",
    async (kind) => {
      const dataDir = join(mkdtempSync(join(tmpdir(), "mh-modes-")), "data");
      // Postgres: a migrated database of the test's own, and DATA_DIR for the spool, blobs and keys.
      const postgres = kind === "postgres" ? await createTestDatabase("postgres") : null;
      await postgres?.database.close();
      const serve = await startServe(dataDir, postgres?.url ?? "");
      try {
        const token = (await Bun.file(join(dataDir, "setup-token")).text()).trim();
        const created = await fetch(`${serve.url}/v1/admin/projects`, {
          method: "POST",
          headers: { "x-setup-token": token, "content-type": "application/json" },
          body: JSON.stringify({ name: "modes" }),
        });
        expect(created.status).toBe(201);
        const apiKey = ((await created.json()) as { api_key: { secret: string } }).api_key.secret;
        // Over 256 KiB: the body is spooled to disk and the raw message adopted into the blob store.
        const attachment = new Uint8Array(400_000).map((_, i) => (i * 31 + 7) & 0xff);
        const raw = buildMail({
          subject: "modes",
          attachments: [
            { filename: "scan.bin", contentType: "application/octet-stream", content: attachment },
          ],
        });
        const posted = await fetch(`${serve.url}/v1/messages`, {
          method: "POST",
          headers: { "x-api-key": apiKey, "content-type": "message/rfc822" },
          body: raw,
        });
        expect(posted.status, await posted.clone().text()).toBe(202);

        const blobs = walk(join(dataDir, "blobs")).filter((e) => e.kind === "file");
        expect(blobs.length).toBeGreaterThanOrEqual(2); // the raw message and the attachment
        const embedded = kind === "pglite" ? ["pg", "pg/PG_VERSION", "pg.lock"] : [];
        for (const written of ["secrets.key", "setup-token", "spool", ...embedded]) {
          expect(
            walk(dataDir).some((e) => e.path === `/${written}`),
            written,
          ).toBe(true);
        }
        expect(notPrivate(dataDir)).toEqual([]); // while it runs (the lock, the open database)
        await serve.stop();
        expect(notPrivate(dataDir)).toEqual([]); // and after the database's shutdown checkpoint
        // Everything was created private: there was nothing to tighten.
        expect(logLines(serve.log.text, "data directory made private")).toEqual([]);
      } finally {
        serve.proc.kill("SIGKILL");
        await postgres?.drop();
        rmSync(join(dataDir, ".."), { recursive: true, force: true });
      }
    },
    120_000,
  );

  test("a directory an older version left open (0755 directories, 0644/0666 files) is closed up at start with one log line; a symlink out of it is not followed", async () => {
    const base = mkdtempSync(join(tmpdir(), "mh-modes-old-"));
    const dataDir = join(base, "data");
    try {
      // An older version's layout: a real database and keys, as open as they used to be.
      const database = await openPglite({ dataDir, databaseUrl: null });
      await database.close();
      writeFileSync(join(dataDir, "secrets.key"), "00".repeat(32));
      writeFileSync(join(dataDir, "setup-token"), "st_old\n");
      let loosened = 0;
      for (const e of walk(dataDir)) {
        if (e.kind === "link") continue;
        chmodSync(join(dataDir, e.path), e.kind === "dir" ? 0o755 : loosened % 2 ? 0o644 : 0o666);
        loosened++;
      }
      const outside = join(base, "outside.txt");
      writeFileSync(outside, "not the service's");
      chmodSync(outside, 0o644);
      symlinkSync(outside, join(dataDir, "link-out"));
      expect(notPrivate(dataDir)).toHaveLength(loosened + 1);

      const serve = await startServe(dataDir);
      try {
        expect(logLines(serve.log.text, "data directory made private")).toEqual([
          expect.objectContaining({ level: "info", dir: dataDir, tightened: loosened }),
        ]);
        await serve.stop();
      } finally {
        serve.proc.kill("SIGKILL");
      }
      expect(notPrivate(dataDir)).toEqual(["link /link-out 777"]); // the link itself, left as it was
      expect(lstatSync(outside).mode & 0o777).toBe(0o644);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  }, 120_000);
});
