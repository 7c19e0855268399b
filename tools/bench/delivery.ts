/**
 * Delivery throughput and latency: our worker on PGlite and on Postgres, and the same workload through
 * graphile-worker (same Postgres server, its own database, same receiver, one POST per job).
 *
 *   bun tools/bench/delivery.ts [--events 5000] [--concurrency 64] [--rate 500] [--only pglite,postgres,graphile]
 *
 * Two phases per target:
 * - burst: `--events` events are created at once, then the workers drain them. Reports delivered
 *   events/s (first creation → last 2xx) and latency from creation to the receiver's 2xx (which in a
 *   burst is mostly queueing).
 * - paced: events are created in chunks at `--rate`/s for about 3 s while the workers run ("ingest"
 *   then NOTIFY, as the ingest pipeline does); latency from creation to 2xx at that load.
 * Our side does the whole job (claim with lease, body build, both signatures, SSRF check, attempt row,
 * event update); graphile's task does a plain fetch of a prebuilt body. Targets: ≥ 1,000
 * events/s on Postgres, ratio ≥ 1.0 vs graphile-worker.
 */
import { parseArgs } from "node:util";
import { sql } from "drizzle-orm";
import { Logger, makeWorkerUtils, run } from "graphile-worker";
import postgres from "postgres";
import { startWorker } from "../../services/delivery/worker.ts";
import { createTestApp, type TestApp } from "../../test/support/app.ts";
import { PG_ADMIN_URL } from "../../test/support/db.ts";
import { runEndOfRun } from "../../test/support/run-end.ts";
import { seedEvents, seedRoute } from "../../test/support/seed-events.ts";

const { values: opts } = parseArgs({
  options: {
    events: { type: "string", default: "5000" },
    concurrency: { type: "string", default: "64" },
    rate: { type: "string", default: "500" },
    only: { type: "string", default: "pglite,postgres,graphile" },
  },
});
const N = Number(opts.events);
const CONCURRENCY = Number(opts.concurrency);
const RATE = Number(opts.rate);
const ONLY = new Set((opts.only ?? "").split(","));

/** A receiver that answers 200 at once and records when each key first got its 2xx. */
function startSink() {
  const arrivals = new Map<string, number>();
  let waiters: { count: number; resolve: () => void }[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      await req.arrayBuffer();
      const key = req.headers.get("x-idempotency-key") ?? req.headers.get("x-job-key") ?? "";
      if (!arrivals.has(key)) arrivals.set(key, Date.now());
      const ready = waiters.filter((w) => arrivals.size >= w.count);
      waiters = waiters.filter((w) => arrivals.size < w.count);
      for (const w of ready) w.resolve();
      return new Response("ok");
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}/hook`,
    arrivals,
    until(count: number, timeoutMs = 120_000): Promise<void> {
      if (arrivals.size >= count) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`only ${arrivals.size}/${count} delivered`)),
          timeoutMs,
        );
        waiters.push({
          count,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
        });
      });
    },
    reset() {
      arrivals.clear();
    },
    stop: () => server.stop(true),
  };
}
type Sink = ReturnType<typeof startSink>;

interface Result {
  target: string;
  phase: string;
  events: number;
  perSec: number;
  p50: number;
  p99: number;
}

function summarise(target: string, phase: string, created: Map<string, number>, sink: Sink): Result {
  const lat: number[] = [];
  let first = Number.POSITIVE_INFINITY;
  let last = 0;
  for (const [key, at] of created) {
    const got = sink.arrivals.get(key);
    if (got === undefined) continue;
    lat.push(got - at);
    first = Math.min(first, at);
    last = Math.max(last, got);
  }
  lat.sort((a, b) => a - b);
  const q = (p: number) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] ?? 0;
  return {
    target,
    phase,
    events: lat.length,
    perSec: Math.round(lat.length / ((last - first) / 1000)),
    p50: q(0.5),
    p99: q(0.99),
  };
}

/**
 * Before each burst is timed: a CHECKPOINT, so neither side pays for writing out dirty buffers that
 * earlier work left (the seeding, the other side's run, or the ingest bench that `bun run bench` runs
 * just before this one), then a short pause. Same for both sides; skipped on PGlite.
 */
async function settle(): Promise<void> {
  const admin = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe("checkpoint");
  } finally {
    await admin.end();
  }
  await Bun.sleep(300);
}

/** Our worker on a fresh database of `kind`. */
async function benchOurs(kind: "pglite" | "postgres", sink: Sink): Promise<Result[]> {
  const app: TestApp = await createTestApp(kind);
  const route = await seedRoute(app, { url: sink.url });
  const keysOf = async (ids: string[], at: number, into: Map<string, number>) => {
    const rows = await app.ctx.database.rows<{ k: string }>(
      sql`select idempotency_key as k from events where id in (${sql.join(
        ids.map((i) => sql`${i}::uuid`),
        sql`, `,
      )})`,
    );
    for (const r of rows) into.set(r.k, at);
  };
  const results: Result[] = [];

  // burst: create everything parked, then make it due at once and start the worker
  sink.reset();
  const burst = new Map<string, number>();
  const ids = await seedEvents(app.ctx, route, { count: N, nextAttemptAt: null, quiet: true });
  await app.ctx.database.rows(sql`update events set next_attempt_at = now()`);
  for (let i = 0; i < ids.length; i += 1000) await keysOf(ids.slice(i, i + 1000), 0, burst);
  if (kind === "postgres") await settle();
  const t0 = Date.now();
  for (const k of burst.keys()) burst.set(k, t0);
  const worker = await startWorker(app.ctx, { concurrency: CONCURRENCY, pollMs: 1000 });
  await sink.until(N);
  results.push(summarise(kind, "burst", burst, sink));

  // paced: ingest chunks at RATE/s while the worker runs
  sink.reset();
  results.push(await paced(kind, sink, async (count) => seedEvents(app.ctx, route, { count }), keysOf));
  await worker.stop();
  await app.close();
  return results;
}

async function paced(
  target: string,
  sink: Sink,
  create: (count: number) => Promise<string[]>,
  keysOf: (ids: string[], at: number, into: Map<string, number>) => Promise<void>,
): Promise<Result> {
  const created = new Map<string, number>();
  const chunk = Math.max(1, Math.round(RATE / 20)); // every 50 ms
  const total = Math.min(N, RATE * 3);
  const pending: Promise<void>[] = [];
  const start = Date.now();
  for (let made = 0, tick = 0; made < total; tick++) {
    const ids = await create(Math.min(chunk, total - made));
    const at = Date.now(); // the events are committed: latency counts from here
    made += ids.length;
    pending.push(keysOf(ids, at, created));
    const next = start + (tick + 1) * 50;
    if (next > Date.now()) await Bun.sleep(next - Date.now());
  }
  await Promise.all(pending);
  await sink.until(total);
  return summarise(target, `paced ${RATE}/s`, created, sink);
}

/** graphile-worker with one task that POSTs a prebuilt body, on its own database. */
async function benchGraphile(sink: Sink): Promise<Result[]> {
  const name = `mh_bench_gw_${Date.now()}`;
  const admin = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${name}"`);
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  const connectionString = url.toString();
  const utils = await makeWorkerUtils({ connectionString, logger: new Logger(() => () => {}) });
  await utils.migrate();
  const body = JSON.stringify({
    schema: { name: "generic", version: "1" },
    message: { subject: "bench" },
    body: { attachments: [] },
  });
  let seq = 0;
  const add = async (count: number) => {
    const specs = Array.from({ length: count }, () => ({
      identifier: "deliver",
      payload: { key: `gw-${seq++}`, body },
    }));
    const jobs = await utils.addJobs(specs);
    return jobs.map((j) => (j.payload as { key: string }).key);
  };
  const keysOf = async (keys: string[], at: number, into: Map<string, number>) => {
    for (const k of keys) into.set(k, at);
  };
  const startRunner = () =>
    run({
      connectionString,
      concurrency: CONCURRENCY,
      noHandleSignals: true,
      pollInterval: 1000,
      logger: new Logger(() => () => {}),
      taskList: {
        deliver: async (payload) => {
          const p = payload as { key: string; body: string };
          const res = await fetch(sink.url, {
            method: "POST",
            headers: { "content-type": "application/json", "x-job-key": p.key },
            body: p.body,
          });
          await res.arrayBuffer();
          if (!res.ok) throw new Error(`http ${res.status}`);
        },
      },
    });
  const results: Result[] = [];
  sink.reset();
  const burst = new Map<string, number>();
  for (let i = 0; i < N; i += 1000) await keysOf(await add(Math.min(1000, N - i)), 0, burst);
  await settle();
  const t0 = Date.now();
  for (const k of burst.keys()) burst.set(k, t0);
  const runner = await startRunner();
  await sink.until(N);
  results.push(summarise("graphile-worker", "burst", burst, sink));
  sink.reset();
  results.push(await paced("graphile-worker", sink, add, keysOf));
  await runner.stop();
  await utils.release();
  // graphile-worker's pools end their connections asynchronously; dropping the database `with (force)`
  // while they close made pg print a "terminating connection" error object. Wait for them (≤ 5 s).
  for (let waited = 0; waited < 5000; waited += 50) {
    const rows = await admin<
      { n: number }[]
    >`select count(*)::int as n from pg_stat_activity where datname = ${name}`;
    if (rows[0]?.n === 0) break;
    await Bun.sleep(50);
  }
  await admin.unsafe(`drop database if exists "${name}" with (force)`);
  await admin.end();
  return results;
}

const sink = startSink();
const results: Result[] = [];
if (ONLY.has("pglite")) results.push(...(await benchOurs("pglite", sink)));
if (ONLY.has("postgres")) results.push(...(await benchOurs("postgres", sink)));
if (ONLY.has("graphile")) results.push(...(await benchGraphile(sink)));
sink.stop();

console.log(`\nevents=${N} concurrency=${CONCURRENCY} rate=${RATE}/s (paced phase)`);
console.table(results.map((r) => ({ ...r, p50: `${r.p50} ms`, p99: `${r.p99} ms` })));
const ours = results.find((r) => r.target === "postgres" && r.phase === "burst");
const theirs = results.find((r) => r.target === "graphile-worker" && r.phase === "burst");
if (ours && theirs)
  console.log(`ratio mailhook/graphile-worker (burst events/s): ${(ours.perSec / theirs.perSec).toFixed(2)}`);
await runEndOfRun(); // drops the Postgres template the test support created
process.exit(0);
