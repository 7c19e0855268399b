/**
 * IMAP benchmark, against a private Dovecot on loopback (test/support/dovecot.ts):
 *
 * 1. backfill: `--messages` small messages (default 5,000) in one folder; a bare imapflow loop fetching
 *    every message's bytes (the peer: what the network and the server allow), then the mailbox poller
 *    taking the same folder in, then the same messages ingested directly without IMAP (the ceiling
 *    processing can reach). The poller is timed twice: until every message is taken in (fetched and
 *    its bytes stored in the database: the folder is done with) and until every message is processed
 *    (parsed, stored, routed, one event each). Figures: the rates, ours ÷ bare for each, processed ÷
 *    direct, and the process's peak RSS during our backfill.
 * 2. IDLE latency: with the delivery worker running and a receiver on loopback, `--samples` messages
 *    are appended one at a time; the time from the APPEND's completion to the webhook arriving, p50/p99.
 * 3. large mailbox (opt-in, `--large 50000`): a second folder of that many small messages backfilled
 *    into another project (one route: one event each); the rate, the process's peak RSS during the
 *    backfill, and the mailbox's `backfill_remaining` as the API reports it, sampled every 250 ms (it
 *    must be seen decreasing, never rising).
 *
 *   bun tools/bench/imap.ts [--messages 5000] [--samples 20] [--large 50000] [--db postgres|pglite]
 */
import { chownSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { sql } from "drizzle-orm";
import { ImapFlow } from "imapflow";
import { startWorker } from "../../services/delivery/worker.ts";
import { createImapSource } from "../../services/ingest/imap.ts";
import { Intake } from "../../services/ingest/intake.ts";
import { createTestApp } from "../../test/support/app.ts";
import { startDovecot } from "../../test/support/dovecot.ts";
import { runEndOfRun } from "../../test/support/run-end.ts";

const { values } = parseArgs({
  options: {
    messages: { type: "string", default: "5000" },
    samples: { type: "string", default: "20" },
    db: { type: "string", default: "postgres" },
    large: { type: "string", default: "0" },
  },
});
const LARGE = Number(values.large);
const N = Number(values.messages);
const SAMPLES = Number(values.samples);
const kind = values.db === "pglite" ? "pglite" : "postgres";

function smallMessage(i: number): string {
  return [
    `From: Sender ${i} <sender${i}@example.com>`,
    "To: inbox@example.net",
    `Subject: bench message ${i}`,
    `Message-ID: <bench-${i}-${Date.now()}@example.com>`,
    "Date: Wed, 25 Nov 2026 12:00:00 +0000",
    "MIME-Version: 1.0",
    "Content-Type: text/plain; charset=utf-8",
    "",
    `Hello, this is message ${i}. ${"Lorem ipsum dolor sit amet. ".repeat(20)}`,
    "",
  ].join("\r\n");
}

const dovecot = await startDovecot();
const client = async () => {
  const c = new ImapFlow({
    host: dovecot.host,
    port: dovecot.port,
    secure: false,
    doSTARTTLS: false,
    auth: { user: dovecot.user, pass: dovecot.password },
    logger: false,
  });
  await c.connect();
  return c;
};

/**
 * Creates `folder` over IMAP and puts `count` small messages straight into its maildir (`new/`), which
 * Dovecot takes in at the next SELECT or STATUS: much faster than one APPEND after another, so a
 * 50,000-message folder takes seconds to fill.
 */
async function fillFolder(folder: string, count: number, first = 0): Promise<void> {
  const c = await client();
  await c.mailboxCreate(folder);
  await c.logout();
  const dir = join(dovecot.maildir, `.${folder}`);
  const owner = statSync(dir);
  const stamp = Math.floor(Date.now() / 1000);
  for (let i = 0; i < count; i++) {
    const bytes = Buffer.from(smallMessage(first + i));
    // S= and W= (file size, size with CRLF line ends: the same here) as Dovecot's own deliveries name
    // them, so it need not read every file to answer RFC822.SIZE.
    const name = `${stamp}.M${i}P${process.pid}.bench,S=${bytes.length},W=${bytes.length}`;
    const path = join(dir, "new", name);
    writeFileSync(path, bytes);
    if (owner.uid !== process.getuid?.()) chownSync(path, owner.uid, owner.gid);
  }
}

/**
 * The large-mailbox part: `LARGE` messages in folder "Large" backfilled by the running source into a
 * new project; its progress is read from the API's view of the mailbox while it runs.
 */
async function largeMailbox(app: Awaited<ReturnType<typeof createTestApp>>): Promise<void> {
  let t = performance.now();
  await fillFolder("Large", LARGE, 1_000_000);
  const indexer = await client();
  await indexer.status("Large", { messages: true });
  await indexer.logout();
  const filled = ((performance.now() - t) / 1000).toFixed(1);
  console.log(`large mailbox: ${LARGE} messages written and indexed by Dovecot in ${filled} s`);
  const r = await app.newProject("large");
  const rEp = await app.request("POST", "/v1/endpoints", {
    apiKey: r.apiKey,
    body: { url: "http://127.0.0.1:9/unused" },
  });
  const rSec = await app.request("POST", "/v1/signing-secrets", { apiKey: r.apiKey, body: {} });
  await app.request("POST", "/v1/routes", {
    apiKey: r.apiKey,
    body: { name: "all", endpoint_id: rEp.body.id, signing_secret_kid: rSec.body.kid },
  });
  Bun.gc(true);
  const startRss = process.memoryUsage().rss;
  let peak = startRss;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  t = performance.now();
  const mbx = await app.request("POST", "/v1/mailboxes", {
    apiKey: r.apiKey,
    body: {
      name: "large",
      host: dovecot.host,
      port: dovecot.port,
      tls: "none",
      auth: { user: dovecot.user, password: dovecot.password },
      folder: "Large",
      since: new Date(Date.now() - 24 * 3600 * 1000).toISOString(),
    },
  });
  // backfill_remaining as the API shows it, each change
  const seen: number[] = [];
  let ingested = 0;
  let takenS = 0;
  let takenPeak = 0;
  while (ingested < LARGE) {
    await Bun.sleep(250);
    const view = await app.request("GET", `/v1/mailboxes/${mbx.body.id}`, { apiKey: r.apiKey });
    const status = view.body.status as {
      backfill_remaining: number | null;
      messages_ingested: number;
      messages_pending: number;
    };
    ingested = status.messages_ingested;
    if (takenS === 0 && status.messages_ingested + status.messages_pending >= LARGE) {
      takenS = (performance.now() - t) / 1000;
      takenPeak = peak;
    }
    const remaining = status.backfill_remaining;
    if (remaining !== null && remaining !== seen.at(-1)) seen.push(remaining);
  }
  const seconds = (performance.now() - t) / 1000;
  clearInterval(sampler);
  const falling = seen.length >= 2 && seen.every((v, i) => i === 0 || v < (seen[i - 1] as number));
  const mib = (b: number) => (b / 1024 / 1024).toFixed(0);
  console.log(`large mailbox backfill of ${LARGE} messages, ${kind}`);
  console.log(
    `  large: mailhook poller ${Math.round(LARGE / takenS)} messages/s taken in (${takenS.toFixed(1)} s; peak RSS meanwhile ${mib(takenPeak)} MiB)`,
  );
  console.log(
    `  large: mailhook poller ${Math.round(LARGE / seconds)} messages/s processed (${seconds.toFixed(1)} s)`,
  );
  console.log(`  large: peak RSS ${mib(peak)} MiB (${mib(startRss)} MiB before)`);
  console.log(
    `  large: backfill_remaining took ${seen.length} values, ${seen[0] ?? "-"} → ${seen.at(-1) ?? "-"}, ${falling ? "decreasing" : "NOT decreasing"}`,
  );
}

try {
  // Fill the folder.
  await fillFolder("Bench", N);

  // The peer: a bare imapflow fetch of every message's bytes, timed from its connection (as the
  // poller's is).
  let t0 = performance.now();
  const bare = await client();
  await bare.mailboxOpen("Bench", { readOnly: true });
  let bytes = 0;
  let fetched = 0;
  for await (const msg of bare.fetch("1:*", { uid: true, source: true })) {
    bytes += msg.source?.byteLength ?? 0;
    fetched++;
  }
  const bareS = (performance.now() - t0) / 1000;
  await bare.logout();
  const bareRate = fetched / bareS;

  // Ours: the poller backfilling the same folder into a project with one route.
  const app = await createTestApp(kind);
  const receivedAt = new Map<string, number>();
  const receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const body = (await req.json()) as { message?: { subject?: string } };
      const subject = body.message?.subject ?? "";
      if (!receivedAt.has(subject)) receivedAt.set(subject, performance.now());
      return new Response("ok");
    },
  });
  const p = await app.newProject();
  const ep = await app.request("POST", "/v1/endpoints", {
    apiKey: p.apiKey,
    body: { url: `http://127.0.0.1:${receiver.port}/hook` },
  });
  const sec = await app.request("POST", "/v1/signing-secrets", { apiKey: p.apiKey, body: {} });
  await app.request("POST", "/v1/routes", {
    apiKey: p.apiKey,
    body: {
      name: "all",
      endpoint_id: ep.body.id,
      signing_secret_kid: sec.body.kid,
      rule: { subject_contains: ["latency"] },
    },
  });
  await app.request("POST", "/v1/routes", {
    apiKey: p.apiKey,
    body: { name: "backfill", endpoint_id: ep.body.id, signing_secret_kid: sec.body.kid, enabled: true },
  });
  const mbx = await app.request("POST", "/v1/mailboxes", {
    apiKey: p.apiKey,
    body: {
      name: "bench",
      host: dovecot.host,
      port: dovecot.port,
      tls: "none",
      auth: { user: dovecot.user, password: dovecot.password },
      folder: "Bench",
      since: new Date(Date.now() - 24 * 3600 * 1000).toISOString(),
    },
  });
  Bun.gc(true);
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
  }, 20);
  const source = await createImapSource({ scanMs: 50 }).start(app.ctx, new Intake(app.ctx, "imap"));
  t0 = performance.now();
  // Two moments: every message taken in (its UID recorded, its bytes in the database: the folder is
  // done with), and every message processed (stored, routed, its event made).
  let takenS = 0;
  for (;;) {
    // (every message here is new and valid: each is either pending or ingested)
    const [row] = await app.ctx.database.rows<{ taken: number; processed: number }>(
      sql`select messages_pending + messages_ingested::int as taken, messages_ingested::int as processed
          from mailboxes where id = ${mbx.body.id}`,
    );
    if (takenS === 0 && Number(row?.taken) >= N) takenS = (performance.now() - t0) / 1000;
    if (Number(row?.processed) >= N) break;
    await Bun.sleep(5);
  }
  const oursS = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  const oursRate = N / oursS;
  const takenRate = N / takenS;
  console.log(
    `backfill of ${N} messages (${Math.round(bytes / N)} bytes each) from Dovecot on loopback, ${kind}`,
  );
  console.log(`  bare imapflow fetch   ${Math.round(bareRate)} messages/s (${bareS.toFixed(2)} s)`);
  console.log(
    `  mailhook poller       ${Math.round(takenRate)} messages/s taken in (${takenS.toFixed(2)} s: fetched and stored in the database)`,
  );
  console.log(
    `  mailhook poller       ${Math.round(oursRate)} messages/s processed (${oursS.toFixed(2)} s: stored, routed, one event each)`,
  );
  console.log(`  poller ÷ bare = ${(takenRate / bareRate).toFixed(2)}× (taken in)`);
  console.log(`  poller ÷ bare = ${(oursRate / bareRate).toFixed(2)}× (processed)`);
  // The ceiling: the same messages ingested directly (32 at a time), no IMAP at all.
  const q = await app.newProject("ceiling");
  // the same work per message as the poller's project: one matching route, so one event each
  const qEp = await app.request("POST", "/v1/endpoints", {
    apiKey: q.apiKey,
    body: { url: `http://127.0.0.1:${receiver.port}/hook` },
  });
  const qSec = await app.request("POST", "/v1/signing-secrets", { apiKey: q.apiKey, body: {} });
  await app.request("POST", "/v1/routes", {
    apiKey: q.apiKey,
    body: { name: "all", endpoint_id: qEp.body.id, signing_secret_kid: qSec.body.kid },
  });
  const intake = new Intake(app.ctx, "imap");
  const raws = Array.from({ length: N }, (_, i) => new TextEncoder().encode(smallMessage(i)));
  let next = 0;
  t0 = performance.now();
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < raws.length) await intake.acceptForProject(q.id, raws[next++] as Uint8Array, null);
    }),
  );
  const directRate = N / ((performance.now() - t0) / 1000);
  console.log(`  direct ingest         ${Math.round(directRate)} messages/s (no IMAP: the ceiling)`);
  console.log(`  poller ÷ direct ingest = ${(oursRate / directRate).toFixed(2)}× (processed)`);
  console.log(`  peak RSS during backfill ${(peakRss / 1024 / 1024).toFixed(0)} MiB`);

  // IDLE latency: the events made so far (backfill, ceiling) are discarded first, so the worker only
  // delivers these.
  await app.ctx.database
    .rows(sql`update events set status = 'discarded'`)
    .catch(async () => await app.ctx.database.rows(sql`delete from events`));
  const worker = await startWorker(app.ctx);
  const appender = await client();
  const latencies: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const subject = `latency ${i}`;
    await appender.append(
      "Bench",
      smallMessage(N + i)
        .replace(/Subject: .*/, `Subject: ${subject}`)
        .replace(/Message-ID: <[^>]*>/, `Message-ID: <lat-${i}-${Date.now()}@example.com>`),
    );
    const landed = performance.now();
    const deadline = landed + 30_000;
    while (!receivedAt.has(subject) && performance.now() < deadline) await Bun.sleep(5);
    latencies.push((receivedAt.get(subject) ?? Number.POSITIVE_INFINITY) - landed);
  }
  await appender.logout();
  latencies.sort((a, b) => a - b);
  const pct = (q: number) =>
    latencies[Math.min(latencies.length - 1, Math.ceil(q * latencies.length) - 1)] ?? 0;
  console.log(`IDLE latency, mail landed → endpoint (${SAMPLES} messages)`);
  console.log(`  p50 ${(pct(0.5) / 1000).toFixed(3)} s, p99 ${(pct(0.99) / 1000).toFixed(3)} s`);
  await worker.stop();
  if (LARGE > 0) await largeMailbox(app);
  await source.stop();
  receiver.stop(true);
  await app.close();
} finally {
  await dovecot.stop();
  await runEndOfRun();
}
process.exit(0);
