/**
 * Outage drill: the receiver is down for two hours of simulated time while mail keeps arriving, then
 * comes back. Runs in-process on an injected clock (services/lib/clock.ts): the drill moves the clock
 * in steps, lets the worker settle after each step (no live lease, nothing due), and adds the step's
 * arrivals as due events (inserted the way ingest inserts them). While down the receiver resets every
 * connection. What must hold:
 * - 0 dead and 0 lost: every event ends `delivered`, every idempotency key reached the receiver;
 * - the attempts spent while down are at most `ENDPOINT_FAILURE_THRESHOLD` plus the probes (one after
 *   1 min, doubling to 30 min), however many messages arrived;
 * - after recovery the backlog drains within the first probe interval that follows (≤ 30 min of
 *   simulated time), in seconds of real time.
 *
 *   bun tools/chaos/outage.ts [--quick] [--db pglite|postgres] [--messages 2000] [--down-min 120]
 */
import { parseArgs } from "node:util";
import { sql } from "drizzle-orm";
import { PROBE_FIRST_MS, PROBE_MAX_MS } from "../../services/delivery/circuit.ts";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { manualClock } from "../../services/lib/clock.ts";
import { createTestApp } from "../../test/support/app.ts";
import type { DbKind } from "../../test/support/db.ts";
import { startReceiver } from "../../test/support/receiver.ts";
import { seedEvents, seedRoute } from "../../test/support/seed-events.ts";

/** Options of {@link runOutageDrill}. */
export interface OutageOptions {
  db: DbKind;
  /** messages arriving while the receiver is down */
  messages: number;
  /** simulated minutes the receiver is down */
  downMinutes: number;
  /** simulated seconds per clock step */
  stepS: number;
  threshold: number;
  log?: (line: string) => void;
}

/** CI quick mode: 200 messages over 2 h in 1-minute steps. */
export const QUICK: Omit<OutageOptions, "db"> = { messages: 200, downMinutes: 120, stepS: 60, threshold: 20 };
/** Full mode: 2,000 messages over 2 h in 15-second steps. */
export const FULL: Omit<OutageOptions, "db"> = { messages: 2000, downMinutes: 120, stepS: 15, threshold: 20 };

/** What the drill measured. */
export interface OutageReport {
  messages: number;
  delivered: number;
  dead: number;
  /** idempotency keys the receiver never answered 2xx for */
  lost: number;
  attemptsWhileDown: number;
  /** attempts while down after the circuit opened (each one a probe) */
  probes: number;
  /** probes the 1 min → 30 min schedule allows in the outage */
  probeBudget: number;
  threshold: number;
  /** simulated minutes from recovery to the last delivery */
  drainSimulatedMin: number;
  /** real seconds from the first post-recovery 2xx to the last */
  drainRealS: number;
  /** real seconds the whole drill took */
  wallS: number;
}

/** How many probes fit in `downMs` on the 1 min, doubling, ≤ 30 min schedule. */
export function probeBudget(downMs: number): number {
  let at = PROBE_FIRST_MS;
  let interval = PROBE_FIRST_MS;
  let n = 0;
  while (at <= downMs) {
    n++;
    interval = Math.min(interval * 2, PROBE_MAX_MS);
    at += interval;
  }
  return n;
}

/** Runs the drill; see the module comment. */
export async function runOutageDrill(opts: OutageOptions): Promise<OutageReport> {
  const log = opts.log ?? (() => {});
  const wall = performance.now();
  const clock = manualClock(new Date("2026-06-01T00:00:00Z"));
  const app = await createTestApp(opts.db, {
    clock,
    env: { ENDPOINT_FAILURE_THRESHOLD: String(opts.threshold) },
  });
  let down = true;
  const okKeys = new Set<string>();
  let firstOkAfter = 0;
  let lastOkAfter = 0;
  const rx = await startReceiver({
    behaviour: (req) => {
      if (down) return { reset: true };
      const now = performance.now();
      if (firstOkAfter === 0) firstOkAfter = now;
      lastOkAfter = now;
      okKeys.add(req.headers["x-idempotency-key"] ?? "");
      return { status: 200 };
    },
  });
  let worker: RunningWorker | null = null;
  try {
    const route = await seedRoute(app, { url: `${rx.url}/hook`, timeoutS: 5 });
    worker = await startWorker(app.ctx, { concurrency: 16, pollMs: 10 });
    const db = app.ctx.database;

    /** Waits until no lease is live and nothing is due at the simulated now. */
    const settle = async (): Promise<void> => {
      const deadline = performance.now() + 60_000;
      await Bun.sleep(5);
      for (;;) {
        const now = clock.now().toISOString();
        const [row] = await db.rows<{ busy: number | string }>(sql`
          select count(*) as busy from events
          where (lease_owner is not null and lease_expires_at > ${now}::timestamptz)
             or (status in ('pending', 'retry') and next_attempt_at <= ${now}::timestamptz)`);
        if (Number(row?.busy ?? 0) === 0) return;
        if (performance.now() > deadline) throw new Error(`the worker did not settle: ${row?.busy} busy`);
        await Bun.sleep(5);
      }
    };

    const downMs = opts.downMinutes * 60_000;
    const steps = Math.ceil(downMs / (opts.stepS * 1000));
    let seeded = 0;
    for (let step = 0; step < steps; step++) {
      const due = Math.round(((step + 1) * opts.messages) / steps);
      if (due > seeded) {
        await seedEvents(app.ctx, route, { count: due - seeded });
        seeded = due;
      }
      await settle();
      clock.advance(opts.stepS * 1000);
      if (step % Math.max(1, Math.floor(steps / 8)) === 0)
        log(
          `outage: ${Math.round(((step + 1) * opts.stepS) / 60)} min, ${seeded} arrived, ${rx.requests.length} attempts`,
        );
    }
    await settle();
    const attemptsWhileDown = rx.requests.length;
    const [ep] = await db.rows<{ circuit_since: Date | string | null }>(
      sql`select circuit_since from endpoints where id = ${route.endpointId}`,
    );
    const openedAt = ep?.circuit_since ? new Date(ep.circuit_since).getTime() : 0;
    const [afterOpen] = await db.rows<{ n: number | string }>(
      sql`select count(*) as n from attempts where endpoint_id = ${route.endpointId}
          and created_at > ${new Date(openedAt).toISOString()}::timestamptz`,
    );
    const probes = Number(afterOpen?.n ?? 0);

    // Recovery: step the clock until every event is delivered.
    down = false;
    const recoveredAt = clock.now().getTime();
    let drainedAt = recoveredAt;
    for (let i = 0; i < (2 * PROBE_MAX_MS) / (opts.stepS * 1000); i++) {
      await settle();
      const [left] = await db.rows<{ n: number | string }>(
        sql`select count(*) as n from events where status <> 'delivered'`,
      );
      if (Number(left?.n ?? 0) === 0) break;
      clock.advance(opts.stepS * 1000);
      drainedAt = clock.now().getTime();
    }
    const counts = await db.rows<{ status: string; n: number | string }>(
      sql`select status, count(*) as n from events group by status`,
    );
    const by = Object.fromEntries(counts.map((c) => [c.status, Number(c.n)]));
    const keys = await db.rows<{ idempotency_key: string }>(sql`select idempotency_key from events`);
    const report: OutageReport = {
      messages: seeded,
      delivered: by.delivered ?? 0,
      dead: by.dead ?? 0,
      lost: keys.filter((k) => !okKeys.has(k.idempotency_key)).length,
      attemptsWhileDown,
      probes,
      probeBudget: probeBudget(downMs),
      threshold: opts.threshold,
      drainSimulatedMin: Math.round(((drainedAt - recoveredAt) / 60_000) * 10) / 10,
      drainRealS: Math.round((lastOkAfter - firstOkAfter) / 100) / 10,
      wallS: Math.round((performance.now() - wall) / 100) / 10,
    };
    log(`outage report: ${JSON.stringify(report)}`);
    return report;
  } finally {
    await worker?.stop();
    await rx.close();
    await app.close();
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      quick: { type: "boolean", default: false },
      db: { type: "string", default: "postgres" },
      messages: { type: "string" },
      "down-min": { type: "string" },
    },
  });
  const base = values.quick ? QUICK : FULL;
  process.env.TEST_PG_URL ??= "postgres://postgres@127.0.0.1:5432/postgres";
  const report = await runOutageDrill({
    ...base,
    db: values.db as DbKind,
    messages: values.messages ? Number(values.messages) : base.messages,
    downMinutes: values["down-min"] ? Number(values["down-min"]) : base.downMinutes,
    log: (l) => console.log(l),
  });
  const ok =
    report.dead === 0 &&
    report.lost === 0 &&
    report.delivered === report.messages &&
    report.attemptsWhileDown <= report.threshold + report.probeBudget;
  console.log(ok ? "outage drill: PASS" : "outage drill: FAIL");
  process.exit(ok ? 0 : 1);
}
