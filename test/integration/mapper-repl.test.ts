/**
 * `bun tools/mapper-repl` as a user runs it (a real process): an `.eml` parsed exactly as the service
 * parses it, a stored message read from the service's database (PGlite and Postgres), the interactive
 * mode with values, node counts and errors with paths, and clear errors for what cannot be loaded.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { parseMessage } from "../../services/mail/parse.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { FIXTURES_DIR } from "../support/paths.ts";

const ROOT = join(import.meta.dir, "../..");
// nodemailer/mailparser's examples/nodemailer.eml (MIT): a real multipart message with attachments.
const EML = join(FIXTURES_DIR, "emails", "nodemailer-example.eml");
const scratch = mkdtempSync(join(tmpdir(), "mh-repl-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function file(name: string, value: unknown): string {
  const path = join(scratch, name);
  writeFileSync(path, JSON.stringify(value));
  return path;
}

async function repl(args: string[], opts: { env?: Record<string, string>; stdin?: string } = {}) {
  const proc = Bun.spawn(["bun", "tools/mapper-repl", ...args], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: "", LOG_LEVEL: "silent", ...opts.env },
    stdin: opts.stdin === undefined ? "ignore" : new Blob([opts.stdin]),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { stdout, stderr, code };
}

const whole = file("whole.json", {
  version: "v1",
  vars: [{ name: "names", expr: { map: [{ var: "message.attachments" }, { var: "filename" }] } }],
  output: { message: { var: "message" }, ctx: { var: "ctx" }, names: { var: "vars.names" } },
});

describe("mapper REPL, non-interactive", () => {
  test("--help prints the usage and exits 0", async () => {
    const r = await repl(["--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toStartWith("usage:");
    for (const flag of [
      "--eml",
      "--message-id",
      "--project",
      "--list",
      "--config",
      "--meta",
      "--interactive",
    ]) {
      expect(r.stdout).toContain(flag);
    }
  });

  test("--config --eml prints the output JSON; the message is the service parser's model", async () => {
    const r = await repl(["--config", whole, "--eml", EML]);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    const raw = new Uint8Array(await Bun.file(EML).arrayBuffer());
    const parsed = await parseMessage(raw, {
      receivedAt: new Date("2025-01-01T00:00:00Z"),
      inboundDomain: "in.localhost",
      newUuid: () => "00000000-0000-4000-8000-000000000000",
    });
    // the parser's model, completed with what the service understands about it, as delivery shows it
    expect(out.message).toMatchObject(JSON.parse(JSON.stringify(parsed.message)));
    expect(out.message).toMatchObject({
      thread_id: parsed.message.message_id,
      auto: { kind: "none" },
      spam: null,
    });
    expect(out.names).toEqual(parsed.message.attachments.map((a) => a.filename));
    expect(out.ctx).toEqual({
      event_id: null,
      project_id: "repl",
      route_id: null,
      source_type: "api",
      raw_size_bytes: raw.length,
      now: "2025-01-01T00:00:00Z",
      // no SMTP envelope for a message read from a file
      envelope: null,
    });
    // reproducible: the same bytes again
    expect((await repl(["--config", whole, "--eml", EML])).stdout).toBe(r.stdout);
  }, 30_000);

  test("a runtime error exits non-zero with its code; an invalid config lists each problem with its path", async () => {
    const deep = file("nodes.json", {
      version: "v1",
      vars: [{ name: "x", expr: { map: [{ var: "meta.list" }, { cat: [{ var: "" }, "!"] }] } }],
      output: { var: "vars.x" },
    });
    const meta = file("meta.json", { list: Array.from({ length: 6000 }, (_, i) => i) });
    const overrun = await repl(["--config", deep, "--eml", EML, "--meta", meta]);
    expect(overrun.code).toBe(1);
    expect(overrun.stderr).toContain("mapper.nodes_exceeded");
    expect(overrun.stderr).toMatch(/at \/vars\/0\/expr \(var x\), after 1\d{4} nodes/);

    const bad = file("bad.json", { version: "v1", vars: [{ name: "1x", expr: { nope: [1] } }], output: 1 });
    const invalid = await repl(["--config", bad, "--eml", EML]);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain("mapper.invalid_config");
    expect(invalid.stderr).toContain("at /vars/0/name");
  }, 30_000);
});

describe("mapper REPL, command line", () => {
  test.each([
    [["--bogus"], 'unknown option "--bogus"'],
    [["--config"], "--config needs a value"],
    [["--eml", "--run"], "--eml needs a value"],
  ])("%p prints the problem and the usage, and exits 64", async (args, problem) => {
    const r = await repl(args);
    expect(r.code).toBe(64);
    expect(r.stderr).toStartWith(problem);
    expect(r.stderr).toContain("usage:");
  });
});

describe("mapper REPL, loading a config while it runs", () => {
  test(":load makes the config's vars visible and :output runs it; an invalid one is refused with its paths", async () => {
    const withVar = file("with-var.json", {
      version: "v1",
      vars: [{ name: "shout", expr: { cat: [{ var: "message.subject" }, "!"] } }],
      output: { s: { var: "vars.shout" } },
    });
    const invalid = file("invalid.json", { version: "v1", vars: [{ name: "9", expr: 1 }], output: 1 });
    const r = await repl(["--interactive", "--eml", EML], {
      stdin: [
        ":output",
        `:load ${invalid}`,
        `:load ${withVar}`,
        '{"var": "vars.shout"}',
        ":output",
        ":bogus",
      ].join("\n"),
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("no config loaded: start with --config FILE or type :load FILE");
    expect(r.stdout).toMatch(/error: mapper\.invalid_config:\n\s+at \/vars\/0\/name/);
    expect(r.stdout).toContain("loaded: 1 vars");
    expect(r.stdout).toContain('"Nodemailer is unicode friendly ✔ (1476358788189)!"   (1 nodes)');
    expect(r.stdout).toContain('"s": "Nodemailer is unicode friendly ✔ (1476358788189)!"');
    expect(r.stdout).toContain("unknown command :bogus");
  }, 30_000);
});

describe("mapper REPL, a DATA_DIR without a database", () => {
  test("--list and --message-id say so instead of creating an empty database there", async () => {
    const empty = join(scratch, "no-service-here");
    for (const args of [["--list"], ["--config", whole, "--message-id", "<x@example.com>"]]) {
      const r = await repl(args, { env: { DATA_DIR: empty } });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`no embedded database in ${empty}: set DATA_DIR`);
    }
    expect(existsSync(join(empty, "pg"))).toBe(false);
    const bad = await repl(["--list"], { env: { DATA_DIR: empty, PORT: "nope" } });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("invalid configuration");
    expect(bad.stderr).not.toContain("    at ");
  }, 30_000);
});

describe("mapper REPL, files it cannot use", () => {
  test("a missing .eml, an unparseable one and a config that is not JSON each name the file, exit 1", async () => {
    const missing = await repl(["--config", whole, "--eml", join(scratch, "nope.eml")]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`cannot read the message ${join(scratch, "nope.eml")}`);

    const empty = join(scratch, "empty.eml");
    writeFileSync(empty, "\r\n\r\n");
    const unparseable = await repl(["--config", whole, "--eml", empty]);
    expect(unparseable.code).toBe(1);
    expect(unparseable.stderr).toContain(`${empty} cannot be parsed as a message: message is empty`);

    const notJson = join(scratch, "not.json");
    writeFileSync(notJson, "{bad");
    const badConfig = await repl(["--config", notJson, "--eml", EML]);
    expect(badConfig.code).toBe(1);
    expect(badConfig.stderr).toContain(`the config ${notJson} is not JSON`);
    for (const r of [missing, unparseable, badConfig]) expect(r.stderr).not.toContain("    at ");
  }, 30_000);
});

describe("mapper REPL, interactive", () => {
  test("values with node counts, errors with paths, :message and :output", async () => {
    const list = file("list.json", { list: Array.from({ length: 6000 }, (_, i) => i) });
    const r = await repl(["--interactive", "--config", whole, "--eml", EML, "--meta", list], {
      stdin: [
        '{"var": "message.subject"}',
        '{"cat": [{"var": "message.from.0.email"}, "!"]}',
        '{"regex.match": {"value": {"var": "message.subject"}}}',
        "not json",
        ":output",
        ":vars",
        '{"map": [{"var": "meta.list"}, {"cat": [{"var": ""}, "!"]}]}',
        ":quit",
      ].join("\n"),
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('"Nodemailer is unicode friendly ✔ (1476358788189)"   (1 nodes)');
    expect(r.stdout).toContain('"andris@kreata.ee!"   (2 nodes)');
    expect(r.stdout).toMatch(/error: mapper\.invalid_config:\n\s+at \/regex\.match/);
    expect(r.stdout).toContain("error: JSON Parse error");
    expect(r.stdout).toContain('"names": [');
    // :vars shows each var's value, not its definition.
    expect(r.stdout).toMatch(/^> names = \[.*\]$/m);
    // A guard overrun in the typed expression says so, with the nodes charged.
    expect(r.stdout).toMatch(/error: mapper\.nodes_exceeded: .*\n\s+at the expression, after 1\d{4} nodes/);
  }, 30_000);
});

for (const kind of testDbKinds()) {
  describe(`mapper REPL on a stored message (${kind})`, () => {
    let app: TestApp;
    let projectId = "";
    let messageId = "";
    let secondProject = "";
    let env: Record<string, string> = {};
    // On PGlite the app holds the embedded database until a test stops it, as a user stops the service.
    let stopped = false;
    const stopService = async () => {
      if (kind === "pglite" && !stopped) {
        stopped = true;
        await app.ctx.database.close();
      }
    };

    beforeAll(async () => {
      app = await createTestApp(kind);
      const p = await app.newProject();
      projectId = p.id;
      const res = await app.request("POST", "/v1/messages", {
        apiKey: p.apiKey,
        rawBody: await Bun.file(EML).arrayBuffer(),
        headers: { "content-type": "message/rfc822" },
      });
      expect(res.status, res.text).toBe(202);
      messageId = res.body.message_id;
      // The same message in a second project: a bare Message-ID is then ambiguous.
      const q = await app.newProject("second");
      const again = await app.request("POST", "/v1/messages", {
        apiKey: q.apiKey,
        rawBody: await Bun.file(EML).arrayBuffer(),
        headers: { "content-type": "message/rfc822" },
      });
      expect(again.status, again.text).toBe(202);
      secondProject = q.id;
      env = app.testDb.url ? { DATABASE_URL: app.testDb.url } : { DATA_DIR: app.testDb.dataDir };
    }, 60_000);
    afterAll(async () => {
      await app?.close();
    });

    if (kind === "pglite") {
      test("while the service holds the embedded database, the REPL says so instead of opening it", async () => {
        const r = await repl(["--config", whole, "--message-id", messageId], { env });
        expect(r.code).toBe(1);
        expect(r.stderr).toContain(`in use by process ${process.pid}`);
        await stopService();
      }, 30_000);
    }

    test("--message-id with or without angle brackets runs the config on the stored model", async () => {
      await stopService();
      const r = await repl(["--config", whole, "--message-id", messageId, "--project", projectId], { env });
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.message.message_id).toBe(messageId);
      expect(out.message.subject).toBe("Nodemailer is unicode friendly ✔ (1476358788189)");
      expect(out.ctx).toMatchObject({ project_id: projectId, source_type: "api", route_id: null });
      expect(out.names.length).toBeGreaterThan(0);
      const bare = await repl(
        ["--config", whole, "--message-id", messageId.slice(1, -1), "--project", projectId],
        {
          env,
        },
      );
      expect(bare.code, bare.stderr).toBe(0);
      expect(JSON.parse(bare.stdout)).toEqual(out);
      // The message's own id, as --list prints it, needs no --project.
      const pk = (await repl(["--list", "--project", projectId], { env })).stdout.split(/\s+/)[2] as string;
      expect(pk).toMatch(/^msg_/);
      const byPk = await repl(["--config", whole, "--message-id", pk], { env });
      expect(byPk.code, byPk.stderr).toBe(0);
      expect(JSON.parse(byPk.stdout)).toEqual(out);
    }, 30_000);

    test("--list shows the newest stored messages (all projects, or one) with what --message-id takes", async () => {
      await stopService();
      const all = await repl(["--list"], { env });
      expect(all.code, all.stderr).toBe(0);
      const lines = all.stdout.trim().split("\n");
      expect(lines).toHaveLength(2);
      for (const line of lines) {
        expect(line).toContain(messageId);
        expect(line).toContain("Nodemailer is unicode friendly ✔ (1476358788189)");
      }
      expect(all.stdout).toContain(projectId);
      expect(all.stdout).toContain(secondProject);
      const one = await repl(["--list", "--project", secondProject], { env });
      expect(one.stdout.trim().split("\n")).toHaveLength(1);
      expect(one.stdout).toContain(secondProject);
      const none = await repl(["--list", "--project", "00000000-0000-4000-8000-000000000000"], { env });
      expect(none.stdout.trim()).toBe("no stored messages");
    }, 30_000);

    test("a Message-ID stored in several projects needs --project, and names them", async () => {
      await stopService();
      const r = await repl(["--config", whole, "--message-id", messageId], { env });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("is stored in 2 projects");
      expect(r.stderr).toContain(projectId);
      expect(r.stderr).toContain(secondProject);
    }, 30_000);

    if (kind === "postgres") {
      test("a missing database is one clear line, not a stack trace", async () => {
        await stopService();
        const url = new URL(env.DATABASE_URL as string);
        url.pathname = "/mailhook_no_such_db";
        const r = await repl(["--config", whole, "--message-id", messageId], {
          env: { DATABASE_URL: url.toString() },
        });
        expect(r.code).toBe(1);
        expect(r.stderr).toContain("does not exist");
        expect(r.stderr).not.toContain("    at ");
      }, 30_000);
    }

    test("an unknown message or project is a clear error", async () => {
      await stopService();
      const missing = await repl(["--config", whole, "--message-id", "<nope@example.com>"], { env });
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain("no stored message <nope@example.com>");
      const other = await repl(
        ["--config", whole, "--message-id", messageId, "--project", "00000000-0000-4000-8000-000000000000"],
        { env },
      );
      expect(other.code).toBe(1);
      expect(other.stderr).toContain("in project 00000000-0000-4000-8000-000000000000");
    }, 30_000);
  });
}

for (const kind of testDbKinds()) {
  describe(`mapper REPL on a Message-ID stored twice with different bytes (${kind})`, () => {
    let app: TestApp;
    let env: Record<string, string> = {};
    let projectId = "";
    let messageId = "";
    const pks: string[] = [];

    beforeAll(async () => {
      app = await createTestApp(kind);
      const p = await app.newProject();
      projectId = p.id;
      const raw = new Uint8Array(await Bun.file(EML).arrayBuffer());
      // The same message, and one that reuses its Message-ID with other bytes.
      const other = new Uint8Array([...new TextEncoder().encode("X-Reused: yes\r\n"), ...raw]);
      for (const body of [raw, other]) {
        const res = await app.request("POST", "/v1/messages", {
          apiKey: p.apiKey,
          rawBody: body,
          headers: { "content-type": "message/rfc822" },
        });
        expect(res.status, res.text).toBe(202);
        expect(res.body.duplicate).toBe(false);
        messageId = res.body.message_id;
      }
      const rows = await app.ctx.database.rows<{ id: string }>(
        sql`select id from messages where project_id = ${projectId} order by received_at, id`,
      );
      pks.push(...rows.map((r) => r.id));
      env = app.testDb.url ? { DATABASE_URL: app.testDb.url } : { DATA_DIR: app.testDb.dataDir };
      // The embedded database belongs to one process: stop the service as a user would.
      if (kind === "pglite") await app.ctx.database.close();
    }, 60_000);
    afterAll(async () => {
      await app?.close();
    });

    test("--message-id refuses to pick one and names the msg_… ids; each of those loads its message", async () => {
      const r = await repl(["--config", whole, "--message-id", messageId, "--project", projectId], { env });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("names 2 stored messages with different bytes");
      for (const pk of pks) expect(r.stderr).toContain(pk);
      const names: string[][] = [];
      for (const pk of pks) {
        const one = await repl(["--config", whole, "--message-id", pk], { env });
        expect(one.code, one.stderr).toBe(0);
        const out = JSON.parse(one.stdout);
        expect(out.message.message_id).toBe(messageId);
        names.push(out.message.attachments.map((a: { id: string }) => a.id));
      }
      // The second message's attachment ids are its own.
      expect(names[0]?.length).toBeGreaterThan(0);
      expect(names[1]?.every((id, i) => id.startsWith(`${names[0]?.[i]}-`))).toBe(true);
    }, 30_000);
  });
}
