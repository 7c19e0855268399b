/**
 * Bulk replay at scale on Postgres: `--events` (100,000) dead events are replayed by ONE
 * `POST /v1/events/replay` while the worker delivers them to a 2xx receiver on loopback, and the API is
 * sampled meanwhile.
 *
 *   bun tools/bench/bulk-replay.ts [--events 100000] [--concurrency 64] [--sample-ms 75] [--deadline-min 20]
 *
 * Seeding: one event is created and delivered for real (a message, a `pending` event, its body built,
 * signed and sent, the attempt recorded), and then cloned in SQL into `--events` messages, events and
 * attempts of the same shape (each message its own Message-ID and idempotency key, each event one failed
 * attempt, a stored body, `dead`, the storage usage counted), in a few statements.
 *
 * Measured from the replay request: enqueued (the job's `finished_at`: every event `pending` again, or
 * queued), delivered (the receiver's first 2xx of every event), and the API's latency over real HTTP on
 * loopback — `GET /v1/events?limit=50` and `GET /v1/jobs/{id}` taken in turn every `--sample-ms` while
 * the run lasts — in the same process as the worker, as `serve` runs them. Targets: ≥ 1,000 events/s
 * enqueued and delivered, API p99 < 100 ms.
 */
import { parseArgs } from "node:util";
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { startWorker } from "../../services/delivery/worker.ts";
import { createTestApp } from "../../test/support/app.ts";
import { PG_ADMIN_URL } from "../../test/support/db.ts";
import { runEndOfRun } from "../../test/support/run-end.ts";
import { seedEvents, seedRoute } from "../../test/support/seed-events.ts";

const { values: opts } = parseArgs({
  options: {
    events: { type: "string", default: "100000" },
    concurrency: { type: "string", default: "64" },
    "sample-ms": { type: "string", default: "75" },
    "deadline-min": { type: "string", default: "20" },
  },
});
const N = Number(opts.events);
const CONCURRENCY = Number(opts.concurrency);
const SAMPLE_MS = Number(opts["sample-ms"]);
const DEADLINE_MIN = Number(opts["deadline-min"]);

const q = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? 0;
};

// The receiver: 200 at once; the first arrival of each idempotency key is counted.
const arrivals = new Set<string>();
let lastArrival = 0;
const receiver = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    await req.arrayBuffer();
    const key = req.headers.get("x-idempotency-key") ?? "";
    if (!arrivals.has(key)) {
      arrivals.add(key);
      lastArrival = performance.now();
    }
    return new Response("ok");
  },
});

const app = await createTestApp("postgres");
const api = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => app.api.handle(req) });
const apiUrl = `http://127.0.0.1:${api.port}`;
const route = await seedRoute(app, { url: `http://127.0.0.1:${receiver.port}/hook` });
const db = app.ctx.database;

// One real event, delivered once by the real worker (a real body, a real attempt row).
const seedStart = performance.now();
const [templateId] = await seedEvents(app.ctx, route, { count: 1 });
const first = await startWorker(app.ctx, { concurrency: 1, pollMs: 50 });
for (let i = 0; i < 200; i++) {
  const [row] = await db.rows<{ status: string }>(
    sql`select status from events where id = ${templateId}::uuid`,
  );
  if (row?.status === "delivered") break;
  await Bun.sleep(50);
}
await first.stop();

/** The insertable columns of `table`, each either copied from the template row `t` or overridden. */
async function cloneSelect(table: string, overrides: Record<string, string>): Promise<[string, string]> {
  const cols = await db.rows<{ column_name: string }>(sql`
    select column_name from information_schema.columns
    where table_schema = current_schema() and table_name = ${table} and is_generated = 'NEVER'
    order by ordinal_position`);
  const names = cols.map((c) => c.column_name);
  return [names.join(", "), names.map((c) => overrides[c] ?? `t.${c}`).join(", ")];
}

// Clone i = 1..N-1 of the template (i = 0 is the template itself). Ids are derived from i.
const msgId = "'msg_' || md5('bulk-msg-' || i)";
const evId = "md5('bulk-ev-' || i)::uuid";
const mid = "'<bulk-' || i || '@bench.example>'";
const [mCols, mSel] = await cloneSelect("messages", {
  id: msgId,
  message_id: mid,
  parsed: `jsonb_set(t.parsed, '{message_id}', to_jsonb(${mid}))`,
});
const [eCols, eSel] = await cloneSelect("events", {
  id: evId,
  message_pk: msgId,
  idempotency_key: `encode(sha256(convert_to(lower(${mid}) || '|' || t.route_id, 'UTF8')), 'hex')`,
});
const [aCols, aSel] = await cloneSelect("attempts", {
  id: "'atm_' || md5('bulk-atm-' || i)",
  event_id: evId,
});
const [tmpl] = await db.rows<{ message_pk: string }>(
  sql`select message_pk from events where id = ${templateId}::uuid`,
);
const STEP = 10_000;
for (let from = 1; from < N; from += STEP) {
  const to = Math.min(N - 1, from + STEP - 1);
  const series = `generate_series(${from}, ${to}) as i`;
  await db.rows(
    sql.raw(
      `insert into messages (${mCols}) select ${mSel} from messages t, ${series} where t.id = '${tmpl?.message_pk}'`,
    ),
  );
  await db.rows(
    sql.raw(
      `insert into events (${eCols}) select ${eSel} from events t, ${series} where t.id = '${templateId}'`,
    ),
  );
  await db.rows(
    sql.raw(
      `insert into attempts (${aCols}) select ${aSel} from attempts t, ${series} where t.event_id = '${templateId}'`,
    ),
  );
}
// Every event dead after one failed attempt; the clones' usage counted like the template's.
await db.rows(
  sql`update attempts set status = 'failed', http_status = 503 where endpoint_id = ${route.endpointId}`,
);
await db.rows(sql`
  update events set status = 'dead', last_error = 'http 503', next_attempt_at = null
  where route_id = ${route.routeId}`);
await db.rows(sql`
  update projects set storage_bytes = storage_bytes
    + (select stored_bytes from messages where id = ${tmpl?.message_pk}) * ${N - 1}
  where id = ${route.projectId}`);
const [counts] = await db.rows<{ dead: number; attempts: number }>(sql`
  select (select count(*)::int from events where route_id = ${route.routeId} and status = 'dead') as dead,
    (select count(*)::int from attempts where endpoint_id = ${route.endpointId}) as attempts`);
if (counts?.dead !== N) throw new Error(`seeded ${counts?.dead} dead events, wanted ${N}`);
const seedMs = performance.now() - seedStart;
{
  const admin = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe("checkpoint");
  await admin.end();
}
await db.rows(sql`analyze`);
arrivals.clear();

const worker = await startWorker(app.ctx, { concurrency: CONCURRENCY });
const headers = { "x-api-key": route.apiKey, "content-type": "application/json" };
const t0 = performance.now();
const t0Wall = Date.now();
const started = await fetch(`${apiUrl}/v1/events/replay`, {
  method: "POST",
  headers,
  body: JSON.stringify({ filter: { status: ["dead"], route_id: route.routeId } }),
});
const startMs = performance.now() - t0;
const { job_id: jobId, queued } = (await started.json()) as { job_id: string; queued: number };
if (started.status !== 202 || queued !== N)
  throw new Error(`replay answered ${started.status}, queued ${queued}`);

const lat: Record<string, number[]> = { events: [], job: [] };
let enqueuedAt: number | null = null;
let turn = 0;
const deadline = t0 + DEADLINE_MIN * 60_000;
while (arrivals.size < N && performance.now() < deadline) {
  const which = turn++ % 2 === 0 ? "events" : "job";
  const path = which === "events" ? "/v1/events?limit=50" : `/v1/jobs/${jobId}`;
  const s = performance.now();
  const res = await fetch(`${apiUrl}${path}`, { headers });
  const body = (await res.json()) as { status?: string };
  const took = performance.now() - s;
  if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}`);
  lat[which]?.push(took);
  if (which === "job" && body.status === "done" && enqueuedAt === null) enqueuedAt = s;
  await Bun.sleep(Math.max(0, SAMPLE_MS - took));
}
const [job] = await db.rows<{ finished_at: Date | string | null; done: number }>(
  sql`select finished_at, done from jobs where id = ${jobId}`,
);
await worker.stop();
const [delivered] = await db.rows<{ n: number }>(sql`
  select count(*)::int as n from events where route_id = ${route.routeId} and status = 'delivered' and attempts = 2`);

// The job's own finish time (the service's clock) is the enqueue end; the sample that first saw it, a check.
const enqueueMs = job?.finished_at != null ? new Date(job.finished_at).getTime() - t0Wall : null;
const deliverMs = lastArrival - t0;
const got = arrivals.size;
if (got < N) console.log(`stopped at the deadline: ${got} of ${N} delivered`);
const all = [...(lat.events ?? []), ...(lat.job ?? [])];
const rate = (ms: number | null, n = N) => (ms === null || ms <= 0 ? "-" : Math.round(n / (ms / 1000)));
console.log(
  `\nbulk replay of ${N} dead events, Postgres, worker concurrency ${CONCURRENCY}, seeded in ${Math.round(seedMs)} ms`,
);
console.table([
  {
    "POST replay ms": Math.round(startMs),
    "enqueued in ms": enqueueMs === null ? "-" : Math.round(enqueueMs),
    "enqueued/s": rate(enqueueMs),
    "delivered in ms": Math.round(deliverMs),
    "delivered/s": rate(deliverMs, got),
    "delivered (db)": delivered?.n ?? 0,
  },
]);
console.table(
  [
    ["GET /v1/events?limit=50", lat.events ?? []],
    ["GET /v1/jobs/{id}", lat.job ?? []],
    ["both", all],
  ].map(([name, xs]) => ({
    api: name as string,
    samples: (xs as number[]).length,
    p50: `${q(xs as number[], 0.5).toFixed(1)} ms`,
    p99: `${q(xs as number[], 0.99).toFixed(1)} ms`,
    max: `${Math.max(0, ...(xs as number[])).toFixed(1)} ms`,
  })),
);
console.log(
  `first sample that saw the job done: ${enqueuedAt === null ? "-" : Math.round(enqueuedAt - t0)} ms`,
);
console.log(
  `BULK_REPLAY_RESULT ${JSON.stringify({
    events: N,
    enqueuedPerSec: rate(enqueueMs),
    delivered: got,
    deliveredPerSec: rate(deliverMs, got),
    apiP50Ms: Number(q(all, 0.5).toFixed(1)),
    apiP99Ms: Number(q(all, 0.99).toFixed(1)),
    durationMs: Math.round(deliverMs),
  })}`,
);
api.stop(true);
receiver.stop(true);
await app.close();
await runEndOfRun();
process.exit(0);
