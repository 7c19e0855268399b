/**
 * Scale-out suite, on one Postgres.
 * 1. Throughput with 1, 2 and 4 `worker` processes: two intake processes (API + SMTP, no worker)
 *    take a backlog of messages over SMTP, then k workers start and drain it; delivered/s is measured
 *    at the receiver (first to last 2xx). The receiver takes `--latency` ms per request, a realistic
 *    endpoint, so the figure shows what extra processes buy when attempts wait on the network.
 * 2. Steady load: 2 `serve` + 4 `worker` processes while messages arrive over SMTP at a fixed rate;
 *    lag = the receiver's 2xx − the SMTP 250 of the message (p50/p99, bounded by `--lag-bound`).
 * Throughout: no event is attempted concurrently twice (the receiver's [start, end] per key never
 * overlap), and at the end every event is delivered, keys map 1:1 to events, nothing is leased.
 * Throughput figures are printed, never asserted.
 *
 *   bun tools/chaos/scale.ts [--quick] [--backlog 600] [--rate 40] [--seconds 30] [--latency 100]
 */
import { createHash } from "node:crypto";
import { parseArgs } from "node:util";
import { WORK_CHANNEL } from "../../services/context.ts";
import { type Cluster, type Proc, setupProject, startCluster } from "./cluster.ts";
import { printReport } from "./crash.ts";
import { makeMessages, type SendOutcome, sendMessages } from "./mta.ts";
import { type Delivery, keyViolations, startSink } from "./sink.ts";
import { verifyDrained, waitDrained } from "./verify.ts";

/** Options of {@link run}. */
export interface ScaleOptions {
  /** messages per throughput phase */
  backlog: number;
  /** worker counts of the throughput phases */
  workerCounts: number[];
  /** steady load: messages/s and for how long */
  rate: number;
  seconds: number;
  /** receiver time per request, ms */
  latencyMs: number;
  /** WORKER_CONCURRENCY of every process */
  concurrency: number;
  /** p99 lag above this is a violation */
  lagBoundMs: number;
  log?: (line: string) => void;
}

/** CI quick mode. */
export const QUICK: ScaleOptions = {
  backlog: 100,
  workerCounts: [1, 2, 4],
  rate: 20,
  seconds: 5,
  latencyMs: 100,
  concurrency: 4,
  lagBoundMs: 10_000,
};
/** Full mode. */
export const FULL: ScaleOptions = { ...QUICK, backlog: 600, rate: 40, seconds: 30 };

/** What a run found. */
export interface ScaleReport {
  /** delivered/s per worker count */
  throughput: Record<string, number>;
  steady: { messages: number; rate: number; lagP50Ms: number; lagP99Ms: number; lagMaxMs: number };
  events: number;
  deliveries: number;
  overlaps: number;
  elapsedMs: number;
  violations: string[];
}

/** `X-Idempotency-Key` of a message on a route (docs/delivery.md). */
export function idempotencyKey(messageId: string, routeId: string): string {
  return createHash("sha256").update(`${messageId.trim().toLowerCase()}|${routeId}`).digest("hex");
}

/** Pairs of requests for one key whose [start, end] intersect (an event attempted twice at once). */
export function overlaps(deliveries: Delivery[]): string[] {
  const byKey = new Map<string, Delivery[]>();
  for (const d of deliveries) byKey.set(d.key, [...(byKey.get(d.key) ?? []), d]);
  const out: string[] = [];
  for (const [key, ds] of byKey) {
    ds.sort((a, b) => a.start - b.start);
    for (let i = 1; i < ds.length; i++) {
      const prev = ds[i - 1] as Delivery;
      const cur = ds[i] as Delivery;
      if (prev.end === null || cur.start < prev.end)
        out.push(`key ${key}: attempts at ${prev.start}..${prev.end} and ${cur.start} overlap`);
    }
  }
  return out;
}

/** Sessions of this database subscribed to the work channel (one per running worker). */
async function listeners(c: Cluster): Promise<number> {
  const [row] = await c.sql<{ n: number }[]>`
    select count(*)::int as n from pg_stat_activity
    where datname = current_database() and query ilike ${`listen%${WORK_CHANNEL}%`}`;
  return row?.n ?? 0;
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await Bun.sleep(50);
  }
}

const quantile = (xs: number[], q: number) =>
  xs.length === 0 ? 0 : (xs[Math.min(xs.length - 1, Math.floor(q * xs.length))] as number);

/** Runs the suite; cleans up processes and the database whatever happens. */
export async function run(opts: ScaleOptions): Promise<ScaleReport> {
  const log = opts.log ?? (() => {});
  const t0 = Date.now();
  const sink = await startSink(() => ({ kind: "ok", delayMs: opts.latencyMs }));
  let cluster: Cluster | null = null;
  try {
    cluster = await startCluster({ WORKER_CONCURRENCY: String(opts.concurrency), WORKER_LEASE_MS: "30000" });
    const c = cluster;
    const intakes = [await c.add("intake"), await c.add("intake")];
    for (const p of intakes) p.start();
    await Promise.all(intakes.map((p) => c.waitHealthy(p)));
    const project = await setupProject(`http://127.0.0.1:${intakes[0]?.httpPort}`, sink.url, 10);
    const workers: Proc[] = [];
    for (let i = 0; i < Math.max(4, ...opts.workerCounts); i++) workers.push(await c.add("worker"));
    const accepted: string[] = [];
    const send = async (n: number, ports: number[], rate?: number): Promise<SendOutcome[]> => {
      const outcomes = await sendMessages({
        messages: makeMessages(n, project.inbound, "scale"),
        to: project.inbound,
        ports,
        clients: 8,
        deadline: Date.now() + 120_000,
        ...(rate ? { rate } : {}),
      });
      for (const o of outcomes) if (o.acceptedAt !== null) accepted.push(o.messageId);
      return outcomes;
    };
    const keysOf = (outcomes: SendOutcome[]) =>
      outcomes.map((o) => idempotencyKey(o.messageId, project.routeId));

    const throughput: Record<string, number> = {};
    for (const k of opts.workerCounts) {
      const keys = keysOf(
        await send(
          opts.backlog,
          intakes.map((p) => p.smtpPort),
        ),
      );
      // Park the backlog until all k workers listen, so start-up skew does not count as throughput.
      await c.sql`update events set next_attempt_at = now() + interval '1 hour' where status = 'pending'`;
      const listening = await listeners(c);
      for (const w of workers.slice(0, k)) w.start();
      await waitFor(async () => (await listeners(c)) >= listening + k, 60_000);
      await c.sql`update events set next_attempt_at = now() where status = 'pending'`;
      await c.sql`select pg_notify(${WORK_CHANNEL}, '')`;
      await waitDrained(c.sql, accepted.length, 120_000);
      await Promise.all(workers.map((w) => w.stop()));
      const times = keys.map((key) => sink.firstOk.get(key)).filter((t): t is number => t !== undefined);
      const span = (Math.max(...times) - Math.min(...times)) / 1000;
      throughput[`${k} worker${k > 1 ? "s" : ""}`] = Math.round(times.length / Math.max(span, 0.001));
      log(`${k} worker(s): ${times.length} delivered at ${throughput[`${k} worker${k > 1 ? "s" : ""}`]}/s`);
    }

    // Steady load on the full topology: 2 serve + 4 worker.
    await Promise.all(intakes.map((p) => p.stop()));
    const serves = [await c.add("serve"), await c.add("serve")];
    for (const p of [...serves, ...workers.slice(0, 4)]) p.start();
    await Promise.all(serves.map((p) => c.waitHealthy(p)));
    const n = Math.round(opts.rate * opts.seconds);
    const steady = await send(
      n,
      serves.map((p) => p.smtpPort),
      opts.rate,
    );
    await waitDrained(c.sql, accepted.length, 60_000);
    const lags = steady
      .map((o) => {
        const ok = sink.firstOk.get(idempotencyKey(o.messageId, project.routeId));
        return o.acceptedAt !== null && ok !== undefined ? ok - o.acceptedAt : Number.NaN;
      })
      .filter((x) => !Number.isNaN(x))
      .sort((a, b) => a - b);
    const lag = { p50: quantile(lags, 0.5), p99: quantile(lags, 0.99), max: lags.at(-1) ?? 0 };
    log(`steady ${opts.rate}/s: lag p50 ${lag.p50} ms, p99 ${lag.p99} ms`);

    const violations: string[] = [];
    const facts = await verifyDrained(c.sql, sink, accepted, violations);
    violations.push(...keyViolations(sink.deliveries));
    const overlapping = overlaps(sink.deliveries);
    violations.push(...overlapping);
    if (lag.p99 > opts.lagBoundMs)
      violations.push(`lag p99 ${lag.p99} ms over the bound ${opts.lagBoundMs} ms`);
    if (lags.length !== n) violations.push(`${n - lags.length} steady-load messages without a lag figure`);
    return {
      throughput,
      steady: { messages: n, rate: opts.rate, lagP50Ms: lag.p50, lagP99Ms: lag.p99, lagMaxMs: lag.max },
      events: facts.events,
      deliveries: sink.deliveries.length,
      overlaps: overlapping.length,
      elapsedMs: Date.now() - t0,
      violations,
    };
  } finally {
    await cluster?.close();
    await sink.close();
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      quick: { type: "boolean", default: false },
      backlog: { type: "string" },
      rate: { type: "string" },
      seconds: { type: "string" },
      latency: { type: "string" },
    },
  });
  const base = values.quick ? QUICK : FULL;
  const num = (v: string | undefined, d: number) => (v === undefined ? d : Number(v));
  const report = await run({
    ...base,
    backlog: num(values.backlog, base.backlog),
    rate: num(values.rate, base.rate),
    seconds: num(values.seconds, base.seconds),
    latencyMs: num(values.latency, base.latencyMs),
    log: (l) => console.log(`· ${l}`),
  });
  printReport(`scale-out (${values.quick ? "quick" : "full"})`, report);
  process.exit(report.violations.length === 0 ? 0 : 1);
}
