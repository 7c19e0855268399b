/**
 * docs/quickstart.md, programmatically, so it stays true: `bun run serve` on a fresh DATA_DIR (embedded
 * database), the operator and project API over HTTP, `bun tools/receiver` and `bun tools/send-mail` as
 * child processes with the flags the doc uses, then the attachment downloaded through its single-use
 * URL. Only the ports differ (free ones, so parallel runs and a developer's own `serve` don't collide).
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eventually } from "../support/eventually.ts";

const ROOT = join(import.meta.dir, "..", "..");
const dir = mkdtempSync(join(tmpdir(), "mh-quickstart-"));
const procs: ReturnType<typeof Bun.spawn>[] = [];

afterAll(async () => {
  for (const p of procs) p.kill("SIGTERM");
  await Promise.all(procs.map((p) => p.exited));
  rmSync(dir, { recursive: true, force: true });
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

// Probes read files and sockets of child processes, which fail until those exist: errors mean "not yet".
const POLL = { everyMs: 50, retryErrors: true };

/** Spawns `cmd` in the repository with `env` added; stdout is collected into `out.text`. */
function spawn(cmd: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawn(cmd, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  procs.push(proc);
  const out = { text: "" };
  void (async () => {
    for await (const chunk of proc.stdout) out.text += new TextDecoder().decode(chunk);
  })();
  return { proc, out };
}

test("the quickstart delivers a verified webhook, its attachment downloads once, send-mail reports refusals", async () => {
  const [httpPort, smtpPort, rxPort] = [await freePort(), await freePort(), await freePort()];
  const base = `http://127.0.0.1:${httpPort}`;
  const env: Record<string, string> = {
    DATA_DIR: join(dir, "data"),
    PORT: String(httpPort),
    SMTP_PORT: String(smtpPort),
    ALLOW_PRIVATE_ENDPOINTS: "true",
    LOG_LEVEL: "warn",
  };
  const { DATABASE_URL: _ignored, SETUP_TOKEN: _alsoIgnored, ...inherited } = process.env;
  const serve = Bun.spawn([process.execPath, "run", "serve"], {
    cwd: ROOT,
    env: { ...inherited, ...env },
    stdout: "ignore",
    stderr: "pipe",
  });
  procs.push(serve);
  const ready = await eventually(
    "serve /readyz",
    async () => {
      if (serve.exitCode !== null)
        throw new Error(`serve exited: ${await new Response(serve.stderr).text()}`);
      const r = await fetch(`${base}/readyz`);
      return r.ok ? await r.json() : undefined;
    },
    30_000,
    POLL,
  );
  expect(ready).toMatchObject({ status: "ok" });

  const token = readFileSync(join(dir, "data", "setup-token"), "utf8").trim();
  const json = async (path: string, init: RequestInit & { key?: string } = {}) => {
    const headers = new Headers(init.headers);
    if (init.key) headers.set("X-API-Key", init.key);
    if (init.body) headers.set("content-type", "application/json");
    const r = await fetch(`${base}${path}`, { ...init, headers });
    const text = await r.text();
    if (!r.ok) throw new Error(`${init.method ?? "GET"} ${path} → ${r.status} ${text}`);
    return JSON.parse(text);
  };
  const project = await json("/v1/admin/projects", {
    method: "POST",
    headers: { "X-Setup-Token": token },
    body: JSON.stringify({ name: "quickstart" }),
  });
  const key: string = project.api_key.secret;
  const signing = await json("/v1/signing-secrets", { method: "POST", key });
  const ep = await json("/v1/endpoints", {
    method: "POST",
    key,
    body: JSON.stringify({ url: `http://127.0.0.1:${rxPort}/hooks/mail` }),
  });
  await json("/v1/routes", {
    method: "POST",
    key,
    body: JSON.stringify({ name: "all mail", endpoint_id: ep.id, signing_secret_kid: signing.kid }),
  });

  const store = join(dir, "deliveries.jsonl");
  const rx = spawn([
    process.execPath,
    "tools/receiver",
    "--port",
    String(rxPort),
    "--secret",
    signing.secret,
    "--kid",
    signing.kid,
    "--store",
    store,
  ]);
  await eventually("receiver to listen", () => rx.out.text.includes("listening"), 30_000, POLL);

  const invoice = join(dir, "invoice.csv");
  writeFileSync(invoice, "item,amount\ntea,4.20\n");
  const send = Bun.spawn(
    [
      process.execPath,
      "tools/send-mail",
      "--to",
      project.inbound_address,
      "--port",
      String(smtpPort),
      "--subject",
      "Invoice 42",
      "--text",
      "Attached.",
      "--attach",
      invoice,
    ],
    { cwd: ROOT, stdout: "pipe", stderr: "pipe" },
  );
  const [sendOut, sendErr, sendCode] = await Promise.all([
    new Response(send.stdout).text(),
    new Response(send.stderr).text(),
    send.exited,
  ]);
  expect(sendCode, sendOut + sendErr).toBe(0);
  expect(sendOut).toStartWith("250 ");

  const delivery = await eventually(
    "the delivery to be stored",
    () => {
      const line = readFileSync(store, "utf8").trim();
      return line ? JSON.parse(line) : undefined;
    },
    30_000,
    POLL,
  );
  // The receiver prints after it stored the delivery (durable first).
  await eventually(
    "the receiver to print the delivery",
    () => rx.out.text.includes("invoice.csv"),
    30_000,
    POLL,
  );
  expect(rx.out.text).toContain("Standard Webhooks ok");
  const messageId: string = delivery.body.message.message_id;
  const attachment = delivery.body.body.attachments[0];
  expect(attachment).toMatchObject({ filename: "invoice.csv", content_type: "text/csv", size: 21 });

  const { url } = await json(
    `/v1/messages/${encodeURIComponent(messageId)}/attachments/${attachment.id}/url`,
    { key },
  );
  const download = await fetch(url);
  expect(download.status).toBe(200);
  expect(await download.text()).toBe("item,amount\ntea,4.20\n");
  expect((await fetch(url)).status).toBe(410);

  const events = await json("/v1/events?limit=1", { key });
  expect(events.items[0]).toMatchObject({ status: "delivered", attempts: 1 });
  const metrics = await (await fetch(`${base}/metrics`)).text();
  expect(metrics).toContain('mailhook_ingest_accepted_total{source="smtp"} 1');
  expect(metrics).toContain('mailhook_events{status="delivered"} 1');
  expect(metrics).toContain('mailhook_delivery_attempt_duration_seconds_count{outcome="delivered"} 1');

  // send-mail --eml sends a file as-is; a refused recipient is exit 1 with the server's reply.
  const eml = join(dir, "stray.eml");
  writeFileSync(eml, "From: a@example.com\r\nTo: nobody@in.localhost\r\nSubject: x\r\n\r\nhi\r\n");
  const refused = Bun.spawn(
    [
      process.execPath,
      "tools/send-mail",
      "--to",
      "nobody@in.localhost",
      "--port",
      String(smtpPort),
      "--eml",
      eml,
    ],
    { cwd: ROOT, stdout: "pipe", stderr: "pipe" },
  );
  const [refusedErr, refusedCode] = await Promise.all([new Response(refused.stderr).text(), refused.exited]);
  expect(refusedCode).toBe(1);
  expect(refusedErr).toContain("550");
}, 90_000);
