/**
 * Receiver chaos suite: a receiver that answers at random with 503, 429 +
 * `Retry-After`, a response slower than the endpoint's `timeout_s`, a connection reset, or 2xx —
 * failing each key at most `maxFailures` times, so the 6-attempt budget always suffices. The endpoint's
 * circuit breaker is out of reach (its threshold is above the failures the receiver can give in all):
 * at this failure rate a run of 20 failures in a row opens it now and then, rightly, and its first probe
 * waits a minute; this suite is about retries and the attempt log, the circuit has its own drill
 * (tools/chaos/outage.ts). Messages go
 * in over SMTP to a `serve` process (plus a `worker`) with a compressed `RETRY_SCHEDULE`. Verified:
 * - every event ends `delivered`;
 * - through the events API (`GET /v1/events/{id}/attempts`), every failed attempt is explained by an
 *   `http_status` or a `network_error`, the last attempt is the success, counts agree with the event;
 * - 503 and 429 rows match the receiver's answers one for one; a retry after `Retry-After: 1` waited
 *   at least about a second.
 * Prints a table of failure classes: what the receiver did vs. what the attempt log says.
 *
 *   bun tools/chaos/receiver.ts [--quick] [--messages 400] [--failure-rate 0.6]
 */
import { parseArgs } from "node:util";
import { type Cluster, setupProject, startCluster } from "./cluster.ts";
import { printReport } from "./crash.ts";
import { makeMessages, sendMessages } from "./mta.ts";
import { type Answer, type Decide, keyViolations, startSink } from "./sink.ts";
import { verifyDrained, waitDrained } from "./verify.ts";

/** Options of {@link chaosDecider}. */
export interface ChaosAnswers {
  /** probability that a request (while the key may still fail) gets a failure */
  failureRate: number;
  /** failures per key at most; after that every request for the key gets 200 */
  maxFailures: number;
  /** delay of a "slow" answer; must exceed the endpoint's `timeout_s` */
  slowMs: number;
  random?: () => number;
}

/** The chaos receiver's policy: a random failure class, bounded per key. */
export function chaosDecider(o: ChaosAnswers): Decide {
  const random = o.random ?? Math.random;
  const failures: Answer[] = [
    { kind: "status", status: 503 },
    { kind: "status", status: 429, headers: { "retry-after": "1" } },
    { kind: "slow", delayMs: o.slowMs },
    { kind: "reset" },
  ];
  return (_key, seen) => {
    if (seen >= o.maxFailures || random() >= o.failureRate) return { kind: "ok" };
    return failures[Math.floor(random() * failures.length)] as Answer;
  };
}

/** Options of {@link run}. */
export interface ReceiverChaosOptions {
  messages: number;
  failureRate: number;
  maxFailures: number;
  drainMs: number;
  log?: (line: string) => void;
}

/** CI quick mode. */
export const QUICK: ReceiverChaosOptions = {
  messages: 60,
  failureRate: 0.6,
  maxFailures: 4,
  drainMs: 60_000,
};
/** Full mode. */
export const FULL: ReceiverChaosOptions = { ...QUICK, messages: 600, drainMs: 180_000 };

/** One row of the failure-class table. */
export interface ClassRow {
  receiver: number;
  attempts: number;
}

/** What a run found. */
export interface ReceiverChaosReport {
  messages: number;
  accepted: number;
  events: number;
  delivered: number;
  requests: number;
  attemptRows: number;
  maxAttemptsPerEvent: number;
  classes: Record<string, ClassRow>;
  elapsedMs: number;
  violations: string[];
}

interface AttemptView {
  number: number;
  status: "success" | "failed";
  http_status: number;
  latency_ms: number;
  created_at: string;
  response_capture: { network_error: string | null } | null;
}

const RECEIVER_CLASS: Record<string, string> = {
  ok: "2xx",
  slow: "timeout (slow answer)",
  reset: "connection reset",
};

/** The class of an attempt row as the attempt log explains it; null when it does not. */
function attemptClass(a: AttemptView): string | null {
  if (a.status === "success") return a.http_status >= 200 && a.http_status < 300 ? "2xx" : null;
  if (a.http_status > 0) return `http ${a.http_status}`;
  const err = a.response_capture?.network_error;
  if (!err) return null;
  return /^timeout/.test(err) ? "timeout (slow answer)" : "connection reset";
}

/** Runs the suite; cleans up processes and the database whatever happens. */
export async function run(opts: ReceiverChaosOptions): Promise<ReceiverChaosReport> {
  const log = opts.log ?? (() => {});
  const t0 = Date.now();
  const sink = await startSink(chaosDecider({ ...opts, slowMs: 1600 }));
  let cluster: Cluster | null = null;
  try {
    cluster = await startCluster({
      RETRY_SCHEDULE: "0,50ms,100ms,200ms,400ms",
      WORKER_LEASE_MS: "10000",
      ENDPOINT_FAILURE_THRESHOLD: String(opts.messages * opts.maxFailures + 1),
    });
    const serve = await cluster.add("serve");
    const worker = await cluster.add("worker");
    serve.start();
    worker.start();
    await cluster.waitHealthy(serve);
    const base = `http://127.0.0.1:${serve.httpPort}`;
    const project = await setupProject(base, sink.url, 1);
    const messages = makeMessages(opts.messages, project.inbound, "rxchaos");
    const outcomes = await sendMessages({
      messages,
      to: project.inbound,
      ports: [serve.smtpPort],
      clients: 4,
      deadline: Date.now() + 120_000,
    });
    const accepted = outcomes.filter((o) => o.acceptedAt !== null).map((o) => o.messageId);
    log(`sent ${accepted.length}/${messages.length}; draining`);
    await waitDrained(cluster.sql, accepted.length, opts.drainMs);
    const violations: string[] = [];
    if (accepted.length !== messages.length)
      violations.push(`${messages.length - accepted.length} not accepted`);
    const facts = await verifyDrained(cluster.sql, sink, accepted, violations);
    violations.push(...keyViolations(sink.deliveries));

    // The attempt log, read as a user would: through the events API.
    const classes: Record<string, ClassRow> = {};
    const row = (c: string) => {
      classes[c] ??= { receiver: 0, attempts: 0 };
      return classes[c];
    };
    for (const d of sink.deliveries) {
      row(d.answer.kind === "status" ? `http ${d.answer.status}` : (RECEIVER_CLASS[d.answer.kind] ?? "?"))
        .receiver++;
    }
    const ids = await cluster.sql<{ id: string }[]>`select id::text from events`;
    let attemptRows = 0;
    let maxAttempts = 0;
    const headers = { "x-api-key": project.apiKey };
    for (const { id } of ids) {
      const [evRes, atRes] = await Promise.all([
        fetch(`${base}/v1/events/${id}`, { headers }),
        fetch(`${base}/v1/events/${id}/attempts`, { headers }),
      ]);
      const ev = (await evRes.json()) as { status: string; attempts: number };
      const items = ((await atRes.json()) as { items: AttemptView[] }).items;
      attemptRows += items.length;
      maxAttempts = Math.max(maxAttempts, items.length);
      if (ev.status !== "delivered") violations.push(`events API: ${id} is ${ev.status}`);
      if (ev.attempts !== items.length)
        violations.push(`${id}: attempts ${ev.attempts} but ${items.length} rows`);
      if (items.at(-1)?.status !== "success") violations.push(`${id}: the last attempt is not the success`);
      items.forEach((a, i) => {
        const c = attemptClass(a);
        if (c === null)
          violations.push(`${id} attempt ${a.number}: failure without http_status or network_error`);
        else row(c).attempts++;
        const next = items[i + 1];
        if (a.http_status === 429 && next) {
          const waited = Date.parse(next.created_at) - next.latency_ms - Date.parse(a.created_at);
          if (waited < 950) violations.push(`${id}: retried ${waited} ms after 429 with Retry-After: 1`);
        }
      });
    }
    for (const c of ["http 503", "http 429"]) {
      const r = classes[c];
      if (r && r.receiver !== r.attempts)
        violations.push(`${c}: receiver sent ${r.receiver}, log has ${r.attempts}`);
    }
    return {
      messages: messages.length,
      accepted: accepted.length,
      events: facts.events,
      delivered: facts.delivered,
      requests: sink.deliveries.length,
      attemptRows,
      maxAttemptsPerEvent: maxAttempts,
      classes,
      elapsedMs: Date.now() - t0,
      violations,
    };
  } finally {
    await cluster?.close();
    await sink.close();
  }
}

/** Prints the failure-class table. */
export function printClasses(classes: Record<string, ClassRow>): void {
  console.log(`  ${"class".padEnd(24)} ${"receiver".padStart(9)} ${"attempt log".padStart(12)}`);
  for (const [c, r] of Object.entries(classes).sort()) {
    console.log(`  ${c.padEnd(24)} ${String(r.receiver).padStart(9)} ${String(r.attempts).padStart(12)}`);
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      quick: { type: "boolean", default: false },
      messages: { type: "string" },
      "failure-rate": { type: "string" },
    },
  });
  const base = values.quick ? QUICK : FULL;
  const report = await run({
    ...base,
    messages: Number(values.messages ?? base.messages),
    failureRate: Number(values["failure-rate"] ?? base.failureRate),
    log: (l) => console.log(`· ${l}`),
  });
  const { classes, ...rest } = report;
  printReport(`receiver chaos (${values.quick ? "quick" : "full"})`, rest);
  printClasses(classes);
  process.exit(report.violations.length === 0 ? 0 : 1);
}
