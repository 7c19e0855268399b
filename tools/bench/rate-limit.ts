/**
 * An endpoint's `rate_limit_per_s` held across worker PROCESSES: `--workers` (4) separate
 * `bun services/main.ts worker` processes share one Postgres database and a backlog of `--events`
 * (4,000) due events of one endpoint limited to `--rate` (50) per second. The receiver answers 200 at
 * once and timestamps every request.
 *
 *   bun tools/bench/rate-limit.ts [--workers 4] [--events 4000] [--rate 50] [--warmup 5] [--window 60]
 *
 * After `--warmup` seconds (the first second may carry the bucket's burst of one second's worth), the
 * next `--window` seconds are cut into whole seconds: it reports the requests of each second, the
 * largest, the smallest and the window's mean, and requests that repeated an idempotency key. Target:
 * the mean and the largest second within +5 % of the rate.
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { sql } from "drizzle-orm";
import { createTestApp, TEST_SETUP_TOKEN } from "../../test/support/app.ts";
import { runEndOfRun } from "../../test/support/run-end.ts";
import { seedEvents, seedRoute } from "../../test/support/seed-events.ts";

const { values: opts } = parseArgs({
  options: {
    workers: { type: "string", default: "4" },
    events: { type: "string", default: "4000" },
    rate: { type: "string", default: "50" },
    warmup: { type: "string", default: "5" },
    window: { type: "string", default: "60" },
  },
});
const WORKERS = Number(opts.workers);
const N = Number(opts.events);
const RATE = Number(opts.rate);
const WARMUP_S = Number(opts.warmup);
const WINDOW_S = Number(opts.window);
if (N < RATE * (WARMUP_S + WINDOW_S + 2))
  throw new Error(
    `--events ${N} runs out before the window ends: at least ${RATE * (WARMUP_S + WINDOW_S + 2)}`,
  );

const times: number[] = [];
const keys = new Set<string>();
let repeats = 0;
const receiver = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    times.push(Date.now());
    await req.arrayBuffer();
    const key = req.headers.get("x-idempotency-key") ?? "";
    if (keys.has(key)) repeats++;
    keys.add(key);
    return new Response("ok");
  },
});

const app = await createTestApp("postgres");
const route = await seedRoute(app, { url: `http://127.0.0.1:${receiver.port}/hook` });
const limited = await app.request("PATCH", `/v1/endpoints/${route.endpointId}`, {
  apiKey: route.apiKey,
  body: { rate_limit_per_s: RATE },
});
if (limited.status !== 200) throw new Error(`PATCH endpoint: ${limited.status} ${limited.text}`);
await seedEvents(app.ctx, route, { count: N, nextAttemptAt: null, quiet: true });

const procs: ReturnType<typeof Bun.spawn>[] = [];
for (let i = 0; i < WORKERS; i++) {
  procs.push(
    Bun.spawn(["bun", "services/main.ts", "worker"], {
      cwd: join(import.meta.dir, "..", ".."),
      env: {
        ...process.env,
        DATABASE_URL: app.testDb.url as string,
        DATA_DIR: app.testDb.dataDir, // the secrets key that sealed the route's secret
        SETUP_TOKEN: TEST_SETUP_TOKEN,
        ALLOW_PRIVATE_ENDPOINTS: "true",
        LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
      },
      stdout: "inherit",
      stderr: "inherit",
    }),
  );
}
// Wait until every process listens for work (its LISTEN connection), then make the backlog due at once.
const dbName = new URL(app.testDb.url as string).pathname.slice(1);
for (let waited = 0; ; waited += 250) {
  const [row] = await app.ctx.database.rows<{ n: number }>(sql`
    select count(*)::int as n from pg_stat_activity where datname = ${dbName} and query ilike 'listen%'`);
  if ((row?.n ?? 0) >= WORKERS) break;
  if (waited > 180_000) throw new Error(`only ${row?.n ?? 0} of ${WORKERS} worker processes started`);
  await Bun.sleep(250);
}
const t0 = Date.now();
await app.ctx.database.rows(sql`update events set next_attempt_at = now() where route_id = ${route.routeId}`);
await app.ctx.wakeWorkers();
const end = t0 + (WARMUP_S + WINDOW_S + 1) * 1000;
while (Date.now() < end) await Bun.sleep(250);
const exited = procs.map((p) => p.exitCode);
if (exited.some((c) => c !== null)) console.log(`worker processes that exited early: ${exited.join(", ")}`);
for (const p of procs) p.kill("SIGTERM");
await Promise.all(procs.map((p) => p.exited));

const statuses = await app.ctx.database.rows<{ status: string; n: number }>(
  sql`select status, count(*)::int as n from events where route_id = ${route.routeId} group by 1 order by 1`,
);
const from = t0 + WARMUP_S * 1000;
const perSecond = Array.from({ length: WINDOW_S }, () => 0);
for (const t of times) {
  const s = Math.floor((t - from) / 1000);
  if (s >= 0 && s < WINDOW_S) perSecond[s] = (perSecond[s] ?? 0) + 1;
}
const firstSecond = times.filter((t) => t >= t0 && t < t0 + 1000).length;
const mean = perSecond.reduce((a, b) => a + b, 0) / WINDOW_S;
const max = Math.max(...perSecond);
const min = Math.min(...perSecond);
console.log(
  `\nrate_limit_per_s ${RATE}, ${WORKERS} worker processes, ${N} events due at once; window: seconds ${WARMUP_S}..${WARMUP_S + WINDOW_S}`,
);
console.log(`events by status at the end: ${statuses.map((r) => `${r.status} ${r.n}`).join(", ")}`);
console.log(`requests per second in the window: ${perSecond.join(" ")}`);
console.table([
  {
    "first second": firstSecond,
    "window mean/s": Number(mean.toFixed(2)),
    "max 1 s": max,
    "min 1 s": min,
    "mean vs limit": `${(((mean - RATE) / RATE) * 100).toFixed(1)} %`,
    "max vs limit": `${(((max - RATE) / RATE) * 100).toFixed(1)} %`,
    "repeated keys": repeats,
  },
]);
console.log(
  `RATE_LIMIT_RESULT ${JSON.stringify({ rate: RATE, workers: WORKERS, meanPerSec: Number(mean.toFixed(2)), maxPerSec: max, minPerSec: min, firstSecond, repeats })}`,
);
receiver.stop(true);
await app.close();
await runEndOfRun();
process.exit(0);
