/**
 * Crash suite: messages go in over SMTP from several clients while `serve` and
 * `worker` processes on one Postgres are SIGKILLed at random moments and restarted. Then the killing
 * stops, the cluster drains (with a deadline) and the invariants are checked:
 * - every message that got a 250 is stored once and has its event (looked up by Message-ID);
 * - every event ends `delivered`, with exactly one successful attempt row;
 * - the receiver saw each key only for one event (keys map 1:1 to events; `webhook-id` = key) and got
 *   every event's key;
 * - nothing is left leased (events and jobs), before and after a graceful stop.
 * Duplicate deliveries are allowed (at-least-once) and counted.
 *
 *   bun tools/chaos/crash.ts [--quick] [--messages 2000] [--serves 2] [--workers 2] [--clients 8]
 *
 * Exit code 1 on any violation. Retries are compressed (`RETRY_SCHEDULE`) and leases short
 * (`WORKER_LEASE_MS`) so a killed worker's claims come back within seconds.
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { type Cluster, type Proc, setupProject, startCluster } from "./cluster.ts";
import { makeMessages, sendMessages } from "./mta.ts";
import { duplicateCount, keyViolations, type Sink, startSink } from "./sink.ts";
import { verifyDrained, waitDrained } from "./verify.ts";

/** Options of {@link run}. */
export interface CrashOptions {
  messages: number;
  serves: number;
  workers: number;
  clients: number;
  /** a kill every [min, max) ms while messages are being sent */
  killEveryMs: [number, number];
  /** keep killing after the last message until this many kills are done */
  minKills: number;
  /** WORKER_LEASE_MS of every process */
  leaseMs: number;
  /** how long the drain may take after the last message was sent */
  drainMs: number;
  log?: (line: string) => void;
}

/** The CI quick mode: ~200 messages, a few kills, well under a minute. */
export const QUICK: CrashOptions = {
  messages: 200,
  serves: 2,
  workers: 1,
  clients: 4,
  killEveryMs: [700, 1500],
  minKills: 4,
  leaseMs: 2000,
  drainMs: 45_000,
};

/** The full mode: 2,000 messages. */
export const FULL: CrashOptions = {
  ...QUICK,
  messages: 2000,
  workers: 2,
  clients: 8,
  killEveryMs: [800, 2500],
};

/** What a run found. `violations` empty means every invariant held. */
export interface CrashReport {
  messages: number;
  accepted: number;
  /** messages refused with 5xx or never accepted before the deadline */
  notAccepted: number;
  smtpTries: number;
  events: number;
  delivered: number;
  /** requests the receiver got, 2xx answers beyond the first per key */
  deliveries: number;
  duplicates: number;
  kills: { serve: number; worker: number };
  unexpectedExits: number;
  sendMs: number;
  drainMs: number;
  elapsedMs: number;
  violations: string[];
}

/** Runs the suite; cleans up every process and the database whatever happens. */
export async function run(opts: CrashOptions): Promise<CrashReport> {
  const log = opts.log ?? (() => {});
  const t0 = Date.now();
  const sink: Sink = await startSink();
  let cluster: Cluster | null = null;
  try {
    cluster = await startCluster({
      RETRY_SCHEDULE: "0,100ms,200ms,400ms,800ms",
      WORKER_LEASE_MS: String(opts.leaseMs),
      WORKER_CONCURRENCY: "16",
    });
    const c = cluster;
    for (let i = 0; i < opts.serves; i++) await c.add("serve");
    for (let i = 0; i < opts.workers; i++) await c.add("worker");
    for (const p of c.procs) p.start();
    const serves = c.procs.filter((p) => p.role === "serve");
    await Promise.all(serves.map((p) => c.waitHealthy(p)));
    const first = serves[0] as Proc;
    const project = await setupProject(`http://127.0.0.1:${first.httpPort}`, sink.url, 5);
    log(`cluster up: ${opts.serves} serve + ${opts.workers} worker on ${c.databaseUrl}`);

    const kills = { serve: 0, worker: 0 };
    let unexpectedExits = 0;
    let killing = true;
    const killer = (async () => {
      const [lo, hi] = opts.killEveryMs;
      const enough = () => kills.serve + kills.worker >= opts.minKills;
      while (killing || !enough()) {
        await Bun.sleep(lo + Math.random() * (hi - lo));
        if (!killing && enough()) break;
        unexpectedExits += await reviveCrashed(c.procs);
        const victim = c.procs[Math.floor(Math.random() * c.procs.length)] as Proc;
        await victim.kill();
        kills[victim.role === "worker" ? "worker" : "serve"]++;
        await Bun.sleep(Math.random() * 300);
        victim.start();
      }
    })();

    const messages = makeMessages(opts.messages, project.inbound);
    const sendStart = Date.now();
    const outcomes = await sendMessages({
      messages,
      to: project.inbound,
      ports: serves.map((p) => p.smtpPort),
      clients: opts.clients,
      deadline: Date.now() + Math.max(120_000, opts.messages * 300),
    }).finally(() => {
      killing = false;
    });
    await killer;
    const sendMs = Date.now() - sendStart;
    unexpectedExits += await reviveCrashed(c.procs);
    const accepted = outcomes.filter((o) => o.acceptedAt !== null);
    log(
      `sent: ${accepted.length}/${messages.length} accepted in ${sendMs} ms; kills ${JSON.stringify(kills)}`,
    );

    const drainStart = Date.now();
    await waitDrained(c.sql, accepted.length, opts.drainMs);
    const drainMs = Date.now() - drainStart;
    const violations: string[] = [];
    const facts = await verifyDrained(
      c.sql,
      sink,
      accepted.map((o) => o.messageId),
      violations,
    );
    // A graceful stop must leave nothing leased either.
    await Promise.all(c.procs.map((p) => p.stop()));
    const leased = await c.sql<{ n: number }[]>`
      select (select count(*) from events where lease_owner is not null)
           + (select count(*) from jobs where lease_owner is not null) as n`;
    if (Number(leased[0]?.n) > 0) violations.push(`${leased[0]?.n} leases left after a graceful stop`);
    // A killed process must not leak disk: its spool files are swept by the next start.
    const spool = join(c.dataDir, "spool");
    const spooled = existsSync(spool) ? readdirSync(spool) : [];
    if (spooled.length > 0)
      violations.push(`${spooled.length} spool files left in ${spool} after a graceful stop`);
    violations.push(...(await blobViolations(c)));
    if (unexpectedExits > 0) violations.push(`${unexpectedExits} process exits nobody asked for`);
    for (const o of outcomes) {
      if (o.acceptedAt === null) log(`not accepted: ${o.messageId}: ${o.failure}`);
    }
    violations.push(...keyViolations(sink.deliveries));
    return {
      messages: messages.length,
      accepted: accepted.length,
      notAccepted: messages.length - accepted.length,
      smtpTries: outcomes.reduce((n, o) => n + o.tries, 0),
      events: facts.events,
      delivered: facts.delivered,
      deliveries: sink.deliveries.length,
      duplicates: duplicateCount(sink.deliveries),
      kills,
      unexpectedExits,
      sendMs,
      drainMs,
      elapsedMs: Date.now() - t0,
      violations,
    };
  } finally {
    await cluster?.close();
    await sink.close();
  }
}

/** Restarts processes that died without our SIGKILL (a crash of their own); returns how many. */
async function reviveCrashed(procs: Proc[]): Promise<number> {
  let n = 0;
  for (const p of procs) {
    if (p.alive || p.pid() === null) continue;
    n++;
    await p.kill(); // reaps the exited child
    p.start();
  }
  return n;
}

/** Every stored message's raw bytes exist (in its row or as a blob), and no half-written blob temp file survived a kill. */
async function blobViolations(c: Cluster): Promise<string[]> {
  const out: string[] = [];
  const root = join(c.dataDir, "blobs");
  // A small message keeps its raw bytes in its row (services/ingest/raw.ts): they must be all there.
  const rows = await c.sql<{ key: string | null; inline: number | null; size: number }[]>`
    select raw_blob_key as key, octet_length(raw_bytes) as inline, raw_size_bytes::float8 as size from messages`;
  const missing = rows.filter((r) => r.key !== null && !existsSync(join(root, r.key)));
  if (missing.length > 0) out.push(`${missing.length} messages reference a missing raw blob`);
  const short = rows.filter((r) => r.key === null && r.inline !== r.size);
  if (short.length > 0) out.push(`${short.length} messages keep fewer raw bytes in their row than they had`);
  const tmp = existsSync(root)
    ? readdirSync(root, { recursive: true }).filter((f) => /(^|\/)\.tmp[-/]./.test(String(f)))
    : [];
  if (tmp.length > 0) out.push(`${tmp.length} half-written blob temp files left in ${root}`);
  return out;
}

/** Prints a report as aligned `name  value` lines, then the violations. */
export function printReport(title: string, report: object & { violations: string[] }): void {
  console.log(title);
  for (const [k, v] of Object.entries(report)) {
    if (k !== "violations") console.log(`  ${k.padEnd(20)} ${typeof v === "object" ? JSON.stringify(v) : v}`);
  }
  console.log(report.violations.length === 0 ? "  OK: every invariant held" : "  VIOLATIONS:");
  for (const v of report.violations.slice(0, 50)) console.log(`    - ${v}`);
  if (report.violations.length > 50) console.log(`    … and ${report.violations.length - 50} more`);
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      quick: { type: "boolean", default: false },
      messages: { type: "string" },
      serves: { type: "string" },
      workers: { type: "string" },
      clients: { type: "string" },
    },
  });
  const base = values.quick ? QUICK : FULL;
  const num = (v: string | undefined, d: number) => (v === undefined ? d : Number(v));
  const report = await run({
    ...base,
    messages: num(values.messages, base.messages),
    serves: num(values.serves, base.serves),
    workers: num(values.workers, base.workers),
    clients: num(values.clients, base.clients),
    log: (l) => console.log(`· ${l}`),
  });
  printReport(`crash suite (${values.quick ? "quick" : "full"})`, report);
  process.exit(report.violations.length === 0 ? 0 : 1);
}
