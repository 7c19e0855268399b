/**
 * Soak: mixed load against a `serve` child process on Postgres — SMTP and HTTP
 * intake, deliveries to a local receiver that fails some of them (503, slow), attachment downloads and
 * events API reads — while the child's RSS (`/proc/<pid>/status` VmRSS) and open file descriptors
 * (`/proc/<pid>/fd`) are sampled. Passes when neither grows without bound: the mean of the last
 * quarter of samples against the mean of the second quarter (the first is warm-up) stays under the
 * thresholds, and the series and least-squares slopes are printed.
 *
 *   bun tools/chaos/soak.ts [--minutes 60] [--rate 6] [--sample-s 10] [--json]
 *
 * `--rate` is messages per second (half SMTP, half HTTP; one in four carries an attachment).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import postgres from "postgres";
import { buildMail } from "../../test/support/raw-mail.ts";
import { RawSmtp } from "../../test/support/smtp.ts";

const PG_ADMIN = process.env.TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const SETUP_TOKEN = "soak-setup-token-0123456789";
/** RSS may grow this much (last quarter vs second quarter) before the soak fails... */
export const RSS_GROWTH_LIMIT = { ratio: 0.2, mib: 48 };
/** ...and open descriptors this much. Both parts of a limit must be exceeded to fail. */
export const FD_GROWTH_LIMIT = { ratio: 0.2, count: 16 };

/** Options of {@link run}. */
export interface SoakOptions {
  minutes: number;
  rate: number;
  sampleSeconds: number;
  log?: (line: string) => void;
}

/** One sample of the server process. */
export interface SoakSample {
  t: number;
  rssMiB: number;
  fds: number;
}

/** What {@link run} measured. */
export interface SoakResult {
  minutes: number;
  samples: SoakSample[];
  rssSlopeMiBPerHour: number;
  fdSlopePerHour: number;
  rssGrowth: { q2: number; q4: number };
  fdGrowth: { q2: number; q4: number };
  counts: Record<string, number>;
  pass: boolean;
  reasons: string[];
}

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

function sample(pid: number, t0: number): SoakSample {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return {
    t: Math.round((Date.now() - t0) / 1000),
    rssMiB: Math.round(kb / 102.4) / 10,
    fds: readdirSync(`/proc/${pid}/fd`).length,
  };
}

/** Least-squares slope of `ys` over `xs` (per unit of x). */
export function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  if (n < 2) return 0;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += ((xs[i] as number) - mx) * ((ys[i] as number) - my);
    den += ((xs[i] as number) - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

/** Means of the second and the last quarter of a series. */
export function quarterMeans(ys: number[]): { q2: number; q4: number } {
  const q = Math.max(1, Math.floor(ys.length / 4));
  const mean = (a: number[]) => (a.length ? a.reduce((x, y) => x + y, 0) / a.length : 0);
  return { q2: mean(ys.slice(q, 2 * q)), q4: mean(ys.slice(ys.length - q)) };
}

/**
 * A receiver: 2xx mostly, 503 for one in eight, a 3 s answer for one in forty. It keeps the attachment
 * ids it sees in generic@1 bodies (the only place a client learns them) for the download load.
 */
function startReceiver(counts: Record<string, number>, attachments: { messageId: string; id: string }[]) {
  let n = 0;
  return Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const body = (await req.json().catch(() => null)) as {
        message?: { message_id?: string };
        body?: { attachments?: { id?: string }[] };
      } | null;
      const id = body?.body?.attachments?.[0]?.id;
      if (id && body?.message?.message_id && attachments.length < 1000)
        attachments.push({ messageId: body.message.message_id, id });
      n++;
      counts.deliveries = (counts.deliveries ?? 0) + 1;
      if (n % 8 === 0) return new Response("busy", { status: 503 });
      if (n % 40 === 1) await Bun.sleep(3000);
      return new Response("ok");
    },
  });
}

/** Runs the soak; never throws for a growth problem (see `pass` and `reasons`). */
export async function run(options: SoakOptions): Promise<SoakResult> {
  const log = options.log ?? (() => {});
  const counts: Record<string, number> = {};
  const bump = (k: string) => {
    counts[k] = (counts[k] ?? 0) + 1;
  };
  const dbName = `mh_soak_${Date.now()}`;
  const admin = postgres(PG_ADMIN, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${dbName}"`);
  const dbUrl = new URL(PG_ADMIN);
  dbUrl.pathname = `/${dbName}`;
  const dataDir = mkdtempSync(join(tmpdir(), "mh-soak-"));
  const seen: { messageId: string; id: string }[] = [];
  const receiver = startReceiver(counts, seen);
  const [port, smtpPort] = [await freePort(), await freePort()];
  const base = `http://127.0.0.1:${port}`;
  const child = Bun.spawn(["bun", join(import.meta.dir, "../../services/main.ts"), "serve"], {
    env: {
      ...process.env,
      DATABASE_URL: dbUrl.toString(),
      DATA_DIR: dataDir,
      PORT: String(port),
      SMTP_PORT: String(smtpPort),
      SETUP_TOKEN,
      ALLOW_PRIVATE_ENDPOINTS: "true",
      RETRY_SCHEDULE: "1s,2s,4s,8s,16s",
      LOG_LEVEL: "error",
      DNS_SERVERS: process.env.DNS_SERVERS ?? "none",
    },
    stdout: "ignore",
    stderr: "inherit",
  });
  const samples: SoakSample[] = [];
  try {
    const t0 = Date.now();
    while (
      !(await fetch(`${base}/healthz`).then(
        (r) => r.ok,
        () => false,
      ))
    ) {
      if (Date.now() - t0 > 60_000 || child.exitCode !== null) throw new Error("serve did not come up");
      await Bun.sleep(200);
    }
    const call = async (method: string, path: string, key: string | null, body?: unknown) => {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: {
          ...(key ? { "x-api-key": key } : { "x-setup-token": SETUP_TOKEN }),
          "content-type": "application/json",
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      if (res.status >= 500) bump(`http_${res.status}`);
      return { status: res.status, body: (await res.json().catch(() => null)) as Record<string, any> | null };
    };
    const project = (await call("POST", "/v1/admin/projects", null, { name: "soak" })).body as Record<
      string,
      any
    >;
    const key = project.api_key.secret as string;
    const ep = (
      await call("POST", "/v1/endpoints", key, {
        url: `http://127.0.0.1:${receiver.port}/hook`,
        timeout_s: 2,
      })
    ).body;
    const ss = (await call("POST", "/v1/signing-secrets", key)).body;
    await call("POST", "/v1/routes", key, {
      name: "all",
      endpoint_id: ep?.id,
      signing_secret_kid: ss?.kid,
      rule: {},
    });

    const attachment = { filename: "r.txt", contentType: "text/plain", content: "x".repeat(20_000) };
    const oneMessage = async (i: number) => {
      const raw = buildMail({ subject: `soak ${i}`, ...(i % 4 === 0 ? { attachments: [attachment] } : {}) });
      if (i % 2 === 0) {
        const smtp = await RawSmtp.connect(smtpPort);
        try {
          await smtp.envelope("soak@example.net", [project.inbound_address]);
          bump((await smtp.data(raw)).code === 250 ? "smtp_250" : "smtp_other");
        } finally {
          await smtp.quit();
        }
        return;
      }
      const res = await fetch(`${base}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "message/rfc822" },
        body: raw,
      });
      bump(res.status === 202 ? "http_202" : `http_${res.status}`);
      const body = (await res.json()) as { message_id: string; events: { id: string }[] };
      const ev = body.events[0];
      if (!ev) return;
      await call("GET", `/v1/events/${ev.id}`, key);
      await call("GET", `/v1/events/${ev.id}/attempts`, key);
      bump("event_reads");
      const att = seen.shift();
      if (!att) return;
      const path = `/v1/messages/${encodeURIComponent(att.messageId)}/attachments/${att.id}/url`;
      const url = await call("GET", path, key);
      const dl = await fetch(String(url.body?.url));
      await dl.arrayBuffer();
      bump(dl.status === 200 ? "downloads" : `download_${dl.status}`);
    };

    const started = Date.now();
    const endAt = started + options.minutes * 60_000;
    let nextSample = started;
    let i = 0;
    const inFlight = new Set<Promise<void>>();
    while (Date.now() < endAt) {
      if (Date.now() >= nextSample) {
        const s = sample(child.pid, started);
        samples.push(s);
        log(`t=${s.t}s rss=${s.rssMiB}MiB fds=${s.fds} ${JSON.stringify(counts)}`);
        nextSample += options.sampleSeconds * 1000;
        const list = await call("GET", "/v1/events?limit=50", key);
        bump(list.status === 200 ? "event_lists" : `events_${list.status}`);
      }
      if (inFlight.size < 16) {
        const p: Promise<void> = oneMessage(i++)
          .catch(() => bump("client_errors"))
          .finally(() => inFlight.delete(p));
        inFlight.add(p);
      }
      await Bun.sleep(1000 / options.rate);
    }
    await Promise.allSettled(inFlight);
    samples.push(sample(child.pid, started));
  } finally {
    child.kill("SIGTERM");
    await Promise.race([child.exited, Bun.sleep(10_000)]);
    if (child.exitCode === null) child.kill("SIGKILL");
    receiver.stop(true);
    await admin.unsafe(`drop database if exists "${dbName}" with (force)`).catch(() => {});
    await admin.end();
    rmSync(dataDir, { recursive: true, force: true });
  }
  const ts = samples.map((s) => s.t / 3600);
  const rssGrowth = quarterMeans(samples.map((s) => s.rssMiB));
  const fdGrowth = quarterMeans(samples.map((s) => s.fds));
  const reasons: string[] = [];
  if (
    rssGrowth.q4 - rssGrowth.q2 > RSS_GROWTH_LIMIT.mib &&
    rssGrowth.q4 > rssGrowth.q2 * (1 + RSS_GROWTH_LIMIT.ratio)
  )
    reasons.push(`RSS grew from ${rssGrowth.q2.toFixed(1)} to ${rssGrowth.q4.toFixed(1)} MiB`);
  if (
    fdGrowth.q4 - fdGrowth.q2 > FD_GROWTH_LIMIT.count &&
    fdGrowth.q4 > fdGrowth.q2 * (1 + FD_GROWTH_LIMIT.ratio)
  )
    reasons.push(`open fds grew from ${fdGrowth.q2.toFixed(1)} to ${fdGrowth.q4.toFixed(1)}`);
  for (const [k, v] of Object.entries(counts))
    if (/^http_5|client_errors|smtp_other/.test(k)) reasons.push(`${v} × ${k}`);
  return {
    minutes: options.minutes,
    samples,
    rssSlopeMiBPerHour:
      Math.round(
        slope(
          ts,
          samples.map((s) => s.rssMiB),
        ) * 10,
      ) / 10,
    fdSlopePerHour:
      Math.round(
        slope(
          ts,
          samples.map((s) => s.fds),
        ) * 10,
      ) / 10,
    rssGrowth,
    fdGrowth,
    counts,
    pass: reasons.length === 0,
    reasons,
  };
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      minutes: { type: "string", default: "60" },
      rate: { type: "string", default: "6" },
      "sample-s": { type: "string", default: "10" },
      json: { type: "boolean", default: false },
    },
  });
  const log = values.json ? () => {} : (l: string) => console.log(l);
  const result = await run({
    minutes: Number(values.minutes),
    rate: Number(values.rate),
    sampleSeconds: Number(values["sample-s"]),
    log,
  });
  if (values.json) console.log(JSON.stringify(result));
  else {
    const { samples: _s, ...rest } = result;
    console.log(`RESULT ${JSON.stringify(rest)}`);
  }
  process.exit(result.pass ? 0 : 1);
}
