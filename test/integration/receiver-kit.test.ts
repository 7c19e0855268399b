/**
 * The receiver kit against real deliveries: the worker delivers one ingested message (with an
 * attachment) to the Python snippet, the TypeScript snippet and `tools/receiver`, each behind its own
 * route; each verifies both signature schemes and stores the delivery; a replay (same idempotency key,
 * new signature) is answered 200 as a duplicate and stored once. Forged, stale and tampered requests
 * signed with our own `signatureHeaders` are refused with 401.
 */

import { Database as Sqlite } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { idempotencyKey, newSigningSecret, signatureHeaders } from "../../services/lib/signing.ts";
import { startReceiverTool } from "../../tools/receiver.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { eventually } from "../support/eventually.ts";

const ROOT = join(import.meta.dir, "..", "..");

/** Spawns a snippet server and resolves with its URL once it printed "listening on <url>". */
async function spawnSnippet(cmd: string[]) {
  const proc = Bun.spawn(cmd, { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const reader = proc.stdout.getReader();
  let out = "";
  const deadline = Date.now() + 15_000;
  while (!/listening on (http:\/\/\S+)/.test(out)) {
    if (Date.now() > deadline) throw new Error(`${cmd.join(" ")} did not start: ${out}`);
    const { value, done } = await reader.read();
    if (done) throw new Error(`${cmd.join(" ")} exited: ${out}${await new Response(proc.stderr).text()}`);
    out += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  const url = /listening on (http:\/\/\S+)/.exec(out)?.[1] as string;
  return { proc, url };
}

const RAW = [
  "From: Ada <ada@example.com>",
  "To: placeholder",
  "Subject: Invoice 42",
  "Message-ID: <kit-1@example.com>",
  "MIME-Version: 1.0",
  'Content-Type: multipart/mixed; boundary="b1"',
  "",
  "--b1",
  "Content-Type: text/plain; charset=utf-8",
  "",
  "Please find the invoice attached.",
  "--b1",
  "Content-Type: text/csv",
  'Content-Disposition: attachment; filename="invoice.csv"',
  "",
  "item,amount",
  "tea,4.20",
  "--b1--",
  "",
].join("\r\n");

describe("receiver kit", () => {
  let app: TestApp;
  let worker: RunningWorker;
  let project: { id: string; apiKey: string; inbound: string };
  const dir = mkdtempSync(join(tmpdir(), "mh-kit-"));
  const procs: ReturnType<typeof Bun.spawn>[] = [];
  let tool: ReturnType<typeof startReceiverTool>;
  const urls: Record<"python" | "ts" | "tool", string> = { python: "", ts: "", tool: "" };
  let secret = "";
  let kid = "";
  const eventIds: Record<string, string> = {};

  beforeAll(async () => {
    app = await createTestApp("pglite");
    project = await app.newProject("kit");
    const ss = await app.request("POST", "/v1/signing-secrets", { apiKey: project.apiKey });
    expect(ss.status, ss.text).toBe(201);
    ({ secret, kid } = ss.body);

    const py = await spawnSnippet([
      "python3",
      "docs/receivers/verify.py",
      "--port",
      "0",
      "--secret",
      secret,
      "--kid",
      kid,
      "--db",
      join(dir, "inbox.sqlite3"),
    ]);
    const ts = await spawnSnippet([
      process.execPath,
      "docs/receivers/verify.ts",
      "--port",
      "0",
      "--secret",
      secret,
      "--inbox",
      join(dir, "inbox.jsonl"),
    ]);
    procs.push(py.proc, ts.proc);
    tool = startReceiverTool({ port: 0, secret, kid, store: join(dir, "tool.jsonl"), print: () => {} });
    urls.python = py.url;
    urls.ts = ts.url;
    urls.tool = `http://127.0.0.1:${tool.port}`;

    for (const [name, url] of Object.entries(urls)) {
      const ep = await app.request("POST", "/v1/endpoints", { apiKey: project.apiKey, body: { url } });
      expect(ep.status, ep.text).toBe(201);
      const rt = await app.request("POST", "/v1/routes", {
        apiKey: project.apiKey,
        body: { name, endpoint_id: ep.body.id, signing_secret_kid: kid },
      });
      expect(rt.status, rt.text).toBe(201);
    }
    worker = await startWorker(app.ctx, { pollMs: 50 });
  }, 60_000);

  afterAll(async () => {
    await worker?.stop();
    for (const p of procs) p.kill();
    tool?.server.stop(true);
    await app?.close();
  });

  test("each receiver verifies and stores a real delivery with its attachment", async () => {
    const res = await app.request("POST", "/v1/messages", {
      apiKey: project.apiKey,
      rawBody: RAW.replace("To: placeholder", `To: ${project.inbound}`),
      headers: { "content-type": "message/rfc822" },
    });
    expect(res.status, res.text).toBe(202);
    expect(res.body.events).toHaveLength(3);
    const routes = (await app.request("GET", "/v1/routes", { apiKey: project.apiKey })).body.items as {
      id: string;
      name: string;
    }[];
    for (const e of res.body.events as { id: string; route_id: string }[]) {
      eventIds[routes.find((r) => r.id === e.route_id)?.name as string] = e.id;
    }
    for (const [name, id] of Object.entries(eventIds)) {
      const ev = await eventually(
        `${name} delivery`,
        async () => (await app.request("GET", `/v1/events/${id}`, { apiKey: project.apiKey })).body,
        15_000,
        { until: (e) => ["delivered", "dead"].includes(e.status) },
      );
      expect(ev.status, `${name}: ${JSON.stringify(ev)}`).toBe("delivered");
    }

    const inbox = new Sqlite(join(dir, "inbox.sqlite3"), { readonly: true });
    const pyRows = inbox.query("select key, body from inbox").all() as { key: string; body: string }[];
    inbox.close();
    const tsRows = readFileSync(join(dir, "inbox.jsonl"), "utf8").trim().split("\n");
    expect(pyRows).toHaveLength(1);
    expect(tsRows).toHaveLength(1);
    expect(tool.accepted).toHaveLength(1);
    const body = JSON.parse(pyRows[0]?.body as string);
    expect(body.message.message_id).toBe("<kit-1@example.com>");
    expect(body.body.attachments).toEqual([
      expect.objectContaining({ filename: "invoice.csv", content_type: "text/csv" }),
    ]);
    const routeIdOf = (name: string) => routes.find((r) => r.name === name)?.id as string;
    expect(pyRows[0]?.key).toBe(idempotencyKey("<kit-1@example.com>", routeIdOf("python")));
    expect(tool.accepted[0]?.key).toBe(idempotencyKey("<kit-1@example.com>", routeIdOf("tool")));
  });

  test("a replay carries the same idempotency key and is answered 200 as a duplicate, stored once", async () => {
    for (const id of Object.values(eventIds)) {
      const r = await app.request("POST", `/v1/events/${id}/replay`, { apiKey: project.apiKey });
      expect(r.status, r.text).toBe(202);
    }
    for (const [name, id] of Object.entries(eventIds)) {
      const attempts = await eventually(
        `${name} replay attempt`,
        async () =>
          (await app.request("GET", `/v1/events/${id}/attempts`, { apiKey: project.apiKey })).body.items,
        15_000,
        { until: (items) => items.length >= 2 },
      );
      expect(attempts[1], name).toMatchObject({ trigger: "replay", status: "success", http_status: 200 });
      expect(attempts[1].response_capture.body_preview, name).toContain("duplicate");
    }
    const inbox = new Sqlite(join(dir, "inbox.sqlite3"), { readonly: true });
    expect(inbox.query("select count(*) as n from inbox").get()).toEqual({ n: 1 });
    inbox.close();
    expect(readFileSync(join(dir, "inbox.jsonl"), "utf8").trim().split("\n")).toHaveLength(1);
    expect(tool.accepted).toHaveLength(1);
  });

  const now = () => Math.floor(Date.now() / 1000);
  const sign = (body: string, opts: { secret?: string; t?: number; kid?: string } = {}) => ({
    "content-type": "application/json",
    "X-Idempotency-Key": idempotencyKey(`<forged-${Math.random()}@x>`, "rt_x"),
    ...signatureHeaders({
      secret: opts.secret ?? secret,
      kid: opts.kid ?? kid,
      body,
      timestampSec: opts.t ?? now(),
      idempotencyKey: "id",
    }),
  });
  const body = '{"hello":"world"}';
  const cases: [string, () => Record<string, string>, string, number][] = [
    ["a valid signature", () => sign(body), body, 200],
    ["a tampered body", () => sign(body), '{"hello":"w0rld"}', 401],
    ["another secret", () => sign(body, { secret: newSigningSecret() }), body, 401],
    ["a timestamp 10 minutes old", () => sign(body, { t: now() - 600 }), body, 401],
    [
      "no signature headers",
      () => ({ "content-type": "application/json", "X-Idempotency-Key": "k" }),
      body,
      401,
    ],
    [
      "a valid X-Service-Signature but a forged webhook-signature",
      () => ({ ...sign(body), "webhook-signature": `v1,${btoa("x".repeat(32))}` }),
      body,
      401,
    ],
  ];
  for (const [what, headers, sent, status] of cases) {
    test(`every receiver answers ${status} to ${what}`, async () => {
      for (const [name, url] of Object.entries(urls)) {
        const r = await fetch(url, { method: "POST", headers: headers(), body: sent });
        expect(r.status, `${name}: ${await r.text()}`).toBe(status);
      }
    });
  }
});
