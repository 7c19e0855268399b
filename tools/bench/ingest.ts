/**
 * Ingest benchmark: messages/s for 2 KB and 1 MB messages over SMTP and HTTP, the server's peak RSS
 * while 8 clients each send a 30 MB message at once, and how much one 49 MB message raises the peak
 * RSS while it is ingested and its event delivered to a loopback receiver (two large attachments, or
 * one plain-text body; over HTTP and over SMTP, each alone; target: growth under 3× the message,
 * docs/ingest.md), SMTP intake of 2 KB messages
 * over 20 reused sessions as a ratio of a bare smtp-server sink (the library alone, answering 250 to
 * every message, in its own process like the server) measured in the same run: the ceiling any
 * service built on that library can reach on this machine; and what sender authentication costs SMTP
 * intake with a warm DNS cache (`auth`, ingest-auth.ts; Postgres only).
 *
 *   bun tools/bench/ingest.ts [--db postgres,pglite] [--small 2000] [--large 60] [--conns 8]
 *                             [--parts throughput,rss,one,auth]
 *                             [--rows smtp-small,http-small,smtp-large,http-large,smtp-sessions]
 *                             [--warmup 3000]
 *
 * The server runs as a child process (this file with `--server`: API + SMTP roles, no delivery
 * worker, so the figures are intake only) on a fresh Postgres database (`TEST_PG_URL`, default
 * postgres://postgres@127.0.0.1:5432/postgres) or on PGlite in a temp DATA_DIR. One route matches
 * every message, so each message also creates one event. RSS is sampled from /proc/<pid>/status.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import postgres from "postgres";
import { RawSmtp } from "../../test/support/smtp.ts";
import { authBench } from "./ingest-auth.ts";

const SETUP_TOKEN = "bench-setup-token-0123456789";
const PG_ADMIN = process.env.TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

/** Child mode: the smtp-server library alone, accepting every message; prints READY <json>. */
async function sinkChild(): Promise<void> {
  const { SMTPServer } = await import("smtp-server");
  const sink = new SMTPServer({
    authOptional: true,
    disabledCommands: ["AUTH", "STARTTLS"],
    // As the service does: no DNS lookup of the client (the bench never leaves loopback).
    disableReverseLookup: true,
    hideENHANCEDSTATUSCODES: false,
    logger: false,
    onData(stream, _session, callback) {
      stream.on("data", () => {});
      stream.on("end", () => callback());
    },
  });
  await new Promise<void>((resolve) => sink.listen(0, "127.0.0.1", resolve));
  process.on("SIGTERM", () => process.exit(0));
  console.log(
    `READY ${JSON.stringify({ http: "", smtp: (sink.server.address() as { port: number }).port })}`,
  );
}

/** Child mode: API + SMTP on the environment's config; prints READY <json> when listening. */
async function serveChild(): Promise<void> {
  const { loadConfig } = await import("../../services/config.ts");
  const { bootstrap } = await import("../../services/bootstrap.ts");
  const { startRoles } = await import("../../services/roles.ts");
  const ctx = await bootstrap(loadConfig());
  // BENCH_AUTH=off: the SMTP intake's sender verdict is a constant (the `auth` part's baseline).
  const authOff = process.env.BENCH_AUTH === "off";
  // BENCH_DELIVERY=on: the delivery worker runs too (the one-message part delivers what it ingests).
  const worker = process.env.BENCH_DELIVERY === "on" ? (["worker"] as const) : [];
  const roles = await startRoles(ctx, authOff ? ["api", ...worker] : ["api", "smtp", ...worker]);
  let smtpPort = roles.smtpPort;
  if (authOff) {
    const { Intake } = await import("../../services/ingest/intake.ts");
    const { startSmtpServer } = await import("../../services/ingest/smtp.ts");
    const { noAuth } = await import("../../mapper/types.ts");
    const intake = new Intake(ctx, "smtp", { assess: async () => ({ auth: noAuth(), spam: null }) });
    smtpPort = (await startSmtpServer(ctx, { intake })).port;
    // What the smtp role runs beside its listener, so that the two servers differ only in the verdict:
    // without it this server never paid for search indexing (to_tsvector in Postgres, after each round).
    const { startSearchIndexer } = await import("../../services/resources/message-search-index.ts");
    startSearchIndexer(ctx);
  }
  // Exit through process.exit so runtime profilers (BENCH_BUN_FLAGS=--cpu-prof) write their output.
  process.on("SIGTERM", () => process.exit(0));
  console.log(`READY ${JSON.stringify({ http: roles.httpUrl, smtp: smtpPort })}`);
}

interface Server {
  pid: number;
  http: string;
  smtp: number;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

async function startServer(
  kind: "postgres" | "pglite" | "sink",
  extraEnv: Record<string, string> = {},
): Promise<Server> {
  const dataDir = mkdtempSync(join(tmpdir(), "mh-bench-"));
  let dbName: string | null = null;
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    DATA_DIR: dataDir,
    PORT: String(await freePort()),
    SMTP_PORT: String(await freePort()),
    SETUP_TOKEN,
    LOG_LEVEL: "warn",
    // Loopback only: no lookups through the machine's resolver. The throughput, RSS and one-message
    // parts measure the intake without sender authentication, comparable with their history; the
    // `auth` part measures it on and off side by side (ingest-auth.ts).
    DNS_SERVERS: "none",
    BENCH_AUTH: "off",
    // Every benchmark client connects from 127.0.0.1: the per-address cap (10) would refuse the
    // 20 sessions of the ceiling comparison.
    SMTP_MAX_CONNECTIONS_PER_IP: "100",
    ...extraEnv,
  };
  delete env.DATABASE_URL;
  if (kind === "postgres") {
    dbName = `mh_bench_${Date.now()}`;
    const admin = postgres(PG_ADMIN, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database "${dbName}"`);
    await admin.end();
    const u = new URL(PG_ADMIN);
    u.pathname = `/${dbName}`;
    env.DATABASE_URL = u.toString();
  }
  // BENCH_BUN_FLAGS passes runtime flags to the server child, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof".
  const flags = (process.env.BENCH_BUN_FLAGS ?? "").split(" ").filter(Boolean);
  const mode = kind === "sink" ? "--sink" : "--server";
  const child = Bun.spawn(["bun", ...flags, import.meta.path, mode], {
    env,
    stdout: "pipe",
    stderr: "inherit",
  });
  const reader = child.stdout.getReader();
  let out = "";
  while (!out.includes("\n") || !out.includes("READY")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`server exited: ${out}`);
    out += new TextDecoder().decode(value);
  }
  const ready = JSON.parse(out.slice(out.indexOf("READY ") + 6).split("\n")[0] as string);
  // Keep draining stdout so the child never blocks on a full pipe.
  void (async () => {
    while (!(await reader.read()).done) {}
  })();
  return {
    pid: child.pid,
    http: ready.http,
    smtp: ready.smtp,
    async stop() {
      child.kill("SIGTERM");
      await child.exited;
      rmSync(dataDir, { recursive: true, force: true });
      if (dbName) {
        const admin = postgres(PG_ADMIN, { max: 1, onnotice: () => {} });
        await admin.unsafe(`drop database if exists "${dbName}" with (force)`);
        await admin.end();
      }
    },
  };
}

async function api(server: Server, path: string, body: unknown, headers: Record<string, string>) {
  const res = await fetch(`${server.http}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Record<string, any>;
}

/**
 * A project with one route that matches every message, to `endpointUrl` (by default a name that is
 * never dialled: the servers of the intake parts run no delivery worker).
 */
async function setupProject(
  server: Server,
  endpointUrl = "https://hooks.example.com/in",
): Promise<{ apiKey: string; inbound: string }> {
  const p = await api(server, "/v1/admin/projects", { name: "bench" }, { "x-setup-token": SETUP_TOKEN });
  const key = { "x-api-key": p.api_key.secret as string };
  const ep = await api(server, "/v1/endpoints", { url: endpointUrl }, key);
  const sec = await api(server, "/v1/signing-secrets", {}, key);
  await api(server, "/v1/routes", { name: "all", endpoint_id: ep.id, signing_secret_kid: sec.kid }, key);
  return { apiKey: p.api_key.secret, inbound: p.inbound_address };
}

let seq = 0;
/** A message of about `size` bytes (text body, or a base64 attachment for large sizes), unique Message-ID. */
function message(size: number, to: string): string {
  const head = [
    "From: Bench <bench@example.com>",
    `To: ${to}`,
    `Subject: bench ${++seq}`,
    `Message-ID: <bench.${process.pid}.${Date.now()}.${seq}@example.com>`,
    "Date: Mon, 06 May 2024 07:08:09 +0000",
    "MIME-Version: 1.0",
  ];
  if (size < 64 * 1024) {
    const line = "The quick brown fox jumps over the lazy dog, again and again and again.\r\n";
    return [...head, "Content-Type: text/plain", "", line.repeat(Math.ceil(size / line.length)), ""].join(
      "\r\n",
    );
  }
  const bytes = Buffer.alloc(Math.floor((size * 3) / 4) - 1024);
  for (let i = 0; i < bytes.length; i += 4096) bytes.writeUInt32LE((i * 2654435761) >>> 0, i);
  const b64 = bytes.toString("base64");
  const lines: string[] = [];
  for (let i = 0; i < b64.length; i += 76) lines.push(b64.slice(i, i + 76));
  return [
    ...head,
    'Content-Type: multipart/mixed; boundary="BENCH"',
    "",
    "--BENCH",
    "Content-Type: text/plain",
    "",
    "See attachment.",
    "--BENCH",
    'Content-Type: application/octet-stream; name="data.bin"',
    'Content-Disposition: attachment; filename="data.bin"',
    "Content-Transfer-Encoding: base64",
    "",
    lines.join("\r\n"),
    "--BENCH--",
    "",
  ].join("\r\n");
}

/** Sends `total` messages over `conns` parallel SMTP connections, pipelining MAIL/RCPT/DATA. */
async function smtpRun(server: Server, inbound: string, size: number, total: number, conns: number) {
  let next = 0;
  const worker = async () => {
    const c = await RawSmtp.connect(server.smtp);
    await c.command("EHLO bench.example.com");
    while (next < total) {
      next++;
      const msg = message(size, inbound);
      await c.write(`MAIL FROM:<bench@example.com>\r\nRCPT TO:<${inbound}>\r\nDATA\r\n`);
      const replies = [await c.reply(), await c.reply(), await c.reply()];
      if (replies[2]?.code !== 354) throw new Error(`DATA refused: ${replies.map((r) => r.raw).join(" | ")}`);
      await c.write(`${msg}.\r\n`);
      const done = await c.reply(120_000);
      if (done.code !== 250) throw new Error(`message refused: ${done.raw}`);
    }
    await c.quit();
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: conns }, worker));
  return total / ((performance.now() - t0) / 1000);
}

async function httpRun(server: Server, apiKey: string, size: number, total: number, conns: number) {
  let next = 0;
  const worker = async () => {
    while (next < total) {
      next++;
      const res = await fetch(`${server.http}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "message/rfc822", "x-api-key": apiKey },
        body: message(size, "bench@in.localhost"),
      });
      if (res.status !== 202) throw new Error(`HTTP ingest: ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: conns }, worker));
  return total / ((performance.now() - t0) / 1000);
}

/** User + system CPU seconds a process has used so far (/proc/<pid>/stat, clock ticks of 10 ms). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** CPU seconds per thread name of a process (diagnostics: BENCH_THREADS=1). */
function threadCpu(pid: number): string {
  const by = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const f = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
      by.set(name, (by.get(name) ?? 0) + (Number(f[11]) + Number(f[12])) / 100);
    } catch {}
  }
  return [...by]
    .sort((a, b) => b[1] - a[1])
    .map(([n, s]) => `  ${n}: ${s.toFixed(2)} s`)
    .join("\n");
}

function memory(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? 0);
  return { rss: kb("VmRSS") * 1024, hwm: kb("VmHWM") * 1024 };
}

/** 8 clients each send one 30 MB message at once over SMTP; returns the server's memory figures. */
async function rssRun(server: Server, inbound: string) {
  const before = memory(server.pid);
  let peak = before.rss;
  const sampler = setInterval(() => {
    peak = Math.max(peak, memory(server.pid).rss);
  }, 20);
  const msgs = Array.from({ length: 8 }, () => message(30 * 1024 * 1024, inbound));
  const t0 = performance.now();
  await Promise.all(
    msgs.map(async (m) => {
      const c = await RawSmtp.connect(server.smtp);
      await c.envelope("bench@example.com", [inbound]);
      const r = await c.data(m);
      await c.quit();
      if (r.code !== 250) throw new Error(`30 MB message refused: ${r.raw}`);
    }),
  );
  clearInterval(sampler);
  const after = memory(server.pid);
  return {
    before: before.rss,
    peak: Math.max(peak, after.rss),
    hwm: after.hwm,
    seconds: (performance.now() - t0) / 1000,
  };
}

/** Resets the process's VmHWM to its current RSS (`/proc/<pid>/clear_refs`, Linux 4.0 on); false if refused. */
function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

/** The single large message: about 49 MB, just under the 50 MiB limit. */
const ONE_MESSAGE_BYTES = 49_000_000;

/** Base64 of `n` bytes in 76-character lines (distinct per `seed`, so blobs are not shared). */
function base64Lines(n: number, seed: number): string {
  const bytes = Buffer.alloc(n);
  for (let i = 0; i + 4 <= n; i += 4096) bytes.writeUInt32LE(((i + seed * 7919) * 2654435761) >>> 0, i);
  const b64 = bytes.toString("base64");
  const lines: string[] = [];
  for (let i = 0; i < b64.length; i += 76) lines.push(b64.slice(i, i + 76));
  return lines.join("\r\n");
}

/**
 * A message of about {@link ONE_MESSAGE_BYTES}: `attachments` is a short text and two base64 files of
 * about 17.5 MB each (both kept: under the 25 MiB attachment limit); `text` is one plain-text body.
 */
function oneMessage(kind: "attachments" | "text", to: string): string {
  const head = [
    "From: Bench <bench@example.com>",
    `To: ${to}`,
    `Subject: one ${kind} ${++seq}`,
    `Message-ID: <one.${process.pid}.${Date.now()}.${seq}@example.com>`,
    "Date: Mon, 06 May 2024 07:08:09 +0000",
    "MIME-Version: 1.0",
  ];
  if (kind === "text") {
    const line = "The quick brown fox jumps over the lazy dog, again and again and again.\r\n";
    const body = line.repeat(Math.floor(ONE_MESSAGE_BYTES / line.length));
    return [...head, "Content-Type: text/plain; charset=utf-8", "", body].join("\r\n");
  }
  // base64 with CRLF every 76 characters: 78 bytes on the wire per 57 bytes of file
  const fileBytes = Math.floor(((ONE_MESSAGE_BYTES / 2) * 57) / 78) - 1024;
  const parts = ["--ONE\r\nContent-Type: text/plain\r\n\r\nTwo files attached."];
  for (let k = 0; k < 2; k++) {
    parts.push(
      [
        "--ONE",
        `Content-Type: application/pdf; name="file${k}.pdf"`,
        `Content-Disposition: attachment; filename="file${k}.pdf"`,
        "Content-Transfer-Encoding: base64",
        "",
        base64Lines(fileBytes, seq * 2 + k),
      ].join("\r\n"),
    );
  }
  return [...head, 'Content-Type: multipart/mixed; boundary="ONE"', "", ...parts, "--ONE--", ""].join("\r\n");
}

/** A webhook receiver on loopback that reads every body whole and answers 200. */
function startSink(): { url: string; received: () => number; stop: () => void } {
  let received = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      await req.arrayBuffer();
      received++;
      return new Response("ok");
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}/hook`,
    received: () => received,
    stop: () => server.stop(true),
  };
}

/** Waits until every event of the project is delivered (the worker recorded its attempt). */
async function allDelivered(server: Server, apiKey: string, count: number): Promise<void> {
  const deadline = Date.now() + 300_000;
  while (Date.now() < deadline) {
    const res = await fetch(`${server.http}/v1/events?limit=200`, { headers: { "x-api-key": apiKey } });
    const page = (await res.json()) as { items: { status: string }[] };
    const delivered = page.items.filter((e) => e.status === "delivered").length;
    if (page.items.some((e) => e.status === "dead")) throw new Error("a bench event went dead");
    if (delivered >= count) return;
    await Bun.sleep(50);
  }
  throw new Error("bench events not delivered within 5 minutes");
}

/**
 * One 49 MB message alone, over HTTP then over SMTP, on a warm server with a delivery worker: the
 * growth of the peak RSS while it is ingested and its event delivered to a loopback receiver (VmHWM
 * after the delivery is recorded, minus the RSS when the peak was reset) divided by the message's size.
 */
async function oneRun(server: Server, apiKey: string, inbound: string) {
  // Warm: the code paths of a large message are compiled, and the first allocations are made.
  await httpRun(server, apiKey, 2 * 1024 * 1024, 2, 1);
  let messages = 2;
  await allDelivered(server, apiKey, messages);
  const out: {
    kind: string;
    via: string;
    before: number;
    hwm: number;
    growth: number;
    /** the growth when the intake answered, before the delivery */
    ingest: number;
    size: number;
  }[] = [];
  for (const kind of ["attachments", "text"] as const) {
    for (const via of ["HTTP", "SMTP"]) {
      const msg = oneMessage(kind, via === "HTTP" ? "bench@in.localhost" : inbound);
      const size = Buffer.byteLength(msg);
      const fair = resetPeak(server.pid);
      const before = memory(server.pid);
      if (via === "HTTP") {
        const res = await fetch(`${server.http}/v1/messages`, {
          method: "POST",
          headers: { "content-type": "message/rfc822", "x-api-key": apiKey },
          body: msg,
        });
        if (res.status !== 202) throw new Error(`HTTP ingest: ${res.status} ${await res.text()}`);
        await res.arrayBuffer();
      } else {
        const c = await RawSmtp.connect(server.smtp);
        await c.envelope("bench@example.com", [inbound]);
        // A loaded 2-core machine can take well over the default 20 s to store 49 MB on PGlite.
        const r = await c.data(msg, 300_000);
        await c.quit();
        if (r.code !== 250) throw new Error(`49 MB message refused: ${r.raw}`);
      }
      const ingested = memory(server.pid);
      await allDelivered(server, apiKey, ++messages);
      const after = memory(server.pid);
      const base = fair ? before.rss : Math.max(before.rss, before.hwm);
      const ingest = ingested.hwm - base;
      out.push({ kind, via, before: before.rss, hwm: after.hwm, growth: after.hwm - base, ingest, size });
    }
  }
  return out;
}

/** Reused SMTP sessions of the ceiling comparison. */
const SESSIONS = 20;

/** Turns of the ceiling comparison: sink and service alternate, so a change of load hits both. */
const TURNS = 4;

/**
 * 2 KB messages over {@link SESSIONS} reused sessions, to a bare smtp-server sink and to the service
 * in alternating turns: the service's rate as a ratio of the sink's, on the same machine state.
 */
async function sessionsRun(server: Server, kind: string, inbound: string, total: number, warm: number) {
  const sink = await startServer("sink");
  try {
    await smtpRun(sink, "sink@example.com", 2048, Math.max(warm, 1000), SESSIONS);
    const per = Math.ceil(total / TURNS);
    let sinkSeconds = 0;
    let serverSeconds = 0;
    for (let turn = 0; turn < TURNS; turn++) {
      sinkSeconds += per / (await smtpRun(sink, "sink@example.com", 2048, per, SESSIONS));
      serverSeconds += per / (await smtpRun(server, inbound, 2048, per, SESSIONS));
    }
    const ceiling = (per * TURNS) / sinkSeconds;
    const rate = (per * TURNS) / serverSeconds;
    console.log(
      `${kind.padEnd(8)} SMTP 2 KB over ${SESSIONS} sessions: ${rate.toFixed(1)} msg/s; bare smtp-server sink ${ceiling.toFixed(1)} msg/s; ratio ${(rate / ceiling).toFixed(3)} x`,
    );
  } finally {
    await sink.stop();
  }
}

const mib = (n: number) => `${(n / 1024 / 1024).toFixed(0)} MiB`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      db: { type: "string", default: "postgres,pglite" },
      small: { type: "string", default: "2000" },
      large: { type: "string", default: "60" },
      conns: { type: "string", default: "8" },
      parts: { type: "string", default: "throughput,rss,one,auth" },
      rows: { type: "string", default: "smtp-small,http-small,smtp-large,http-large,smtp-sessions" },
      sessions: { type: "string", default: "4000" },
      warmup: { type: "string", default: "3000" },
    },
  });
  const conns = Number(values.conns);
  if ((values.parts ?? "").split(",").includes("auth")) {
    await authBench(
      { startServer: (env) => startServer("postgres", env), setupProject },
      Number(values.small),
      conns,
    );
  }
  for (const kind of (values.db ?? "").split(",") as ("postgres" | "pglite")[]) {
    const parts = (values.parts ?? "").split(",");
    if (parts.includes("throughput")) {
      const server = await startServer(kind);
      try {
        const { apiKey, inbound } = await setupProject(server);
        // Warm-up: a freshly started server spends its first seconds compiling its hot paths (JSC's
        // optimising FTL tier took ~4 s of CPU on a 2-core machine, single functions up to 0.5 s), on
        // the same cores as the work. The figures are for a running server, as a sender sees it.
        const warm = Number(values.warmup);
        if (warm > 0) {
          await smtpRun(server, inbound, 2048, warm, conns);
          await httpRun(server, apiKey, 2048, Math.ceil(warm / 4), conns);
        }
        const small = Number(values.small);
        const large = Number(values.large);
        const runs: [string, string, () => Promise<number>][] = [
          ["smtp-small", "SMTP 2 KB", () => smtpRun(server, inbound, 2048, small, conns)],
          ["http-small", "HTTP 2 KB", () => httpRun(server, apiKey, 2048, small, conns)],
          ["smtp-large", "SMTP 1 MB", () => smtpRun(server, inbound, 1024 * 1024, large, conns)],
          ["http-large", "HTTP 1 MB", () => httpRun(server, apiKey, 1024 * 1024, large, conns)],
        ];
        const wanted = (values.rows ?? "").split(",");
        if (wanted.includes("smtp-sessions"))
          await sessionsRun(server, kind, inbound, Number(values.sessions), warm);
        for (const [id, name, run] of runs) {
          if (!wanted.includes(id)) continue;
          const cpu0 = cpuSeconds(server.pid);
          const client0 = process.cpuUsage();
          const rate = await run();
          const count = id.endsWith("small") ? small : large;
          const perMessage = ((cpuSeconds(server.pid) - cpu0) / count) * 1000;
          const used = process.cpuUsage(client0);
          const clientPerMessage = (used.user + used.system) / 1000 / count;
          console.log(
            `${kind.padEnd(8)} ${name.padEnd(10)} ${rate.toFixed(1)} msg/s (server CPU ${perMessage.toFixed(2)} ms/msg, this client ${clientPerMessage.toFixed(2)} ms/msg)`,
          );
          if (process.env.BENCH_THREADS) console.log(threadCpu(server.pid));
        }
      } finally {
        await server.stop();
      }
    }
    if (parts.includes("rss")) {
      const fresh = await startServer(kind);
      try {
        const { inbound } = await setupProject(fresh);
        const r = await rssRun(fresh, inbound);
        console.log(
          `${kind.padEnd(8)} 8 x 30 MB over SMTP: ${r.seconds.toFixed(1)} s; RSS before ${mib(r.before)}, peak sampled ${mib(r.peak)}, VmHWM ${mib(r.hwm)}`,
        );
      } finally {
        await fresh.stop();
      }
    }
    if (parts.includes("one")) {
      const sink = startSink();
      const fresh = await startServer(kind, { BENCH_DELIVERY: "on", ALLOW_PRIVATE_ENDPOINTS: "true" });
      try {
        const { apiKey, inbound } = await setupProject(fresh, sink.url);
        for (const r of await oneRun(fresh, apiKey, inbound)) {
          console.log(
            `${kind.padEnd(8)} one 49 MB message (${r.kind}) over ${r.via}: RSS before ${mib(r.before)}, VmHWM ${mib(r.hwm)}, peak RSS growth ${mib(r.growth)} = ${(r.growth / r.size).toFixed(2)} x the message (ingest alone ${(r.ingest / r.size).toFixed(2)} x)`,
          );
        }
      } finally {
        await fresh.stop();
        sink.stop();
      }
    }
  }
}

// Last: the helpers above (and their module-level state) must be initialised first.
if (process.argv.includes("--server")) {
  await serveChild();
} else if (process.argv.includes("--sink")) {
  await sinkChild();
} else {
  await main();
}
