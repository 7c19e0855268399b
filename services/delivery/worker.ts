/**
 * The delivery worker. One instance per process; any number of processes share a
 * Postgres database. It claims due events in batches with a lease (claim.ts), a refill ahead of its
 * free slots, has up to `concurrency` attempts' requests in flight at once (deliver.ts; their results
 * are written by one recorder, record.ts), runs `replay_event` jobs (replay.ts), and wakes:
 * - at once on new work (`WORK_CHANNEL`: LISTEN/NOTIFY on Postgres, in-process on PGlite),
 * - when attempt slots free up, and at the time of a retry due soon,
 * - every `pollMs` otherwise (the fallback when a notification is lost).
 * A sweeper frees expired leases. `stop()` (SIGTERM) stops claiming, lets in-flight attempts finish
 * and gives back the leases of events claimed but not yet attempted.
 */
import { hostname } from "node:os";
import { type AppContext, WORK_CHANNEL } from "../context.ts";
import { randomToken } from "../lib/ids.ts";
import { JOBS_NOTIFICATION } from "../resources/replay.ts";
import { failBulkReplay, runBulkReplayChunk } from "./bulk-replay.ts";
import {
  type ClaimedEvent,
  claimDueEvents,
  claimDueJobs,
  releaseEventLeases,
  releaseExpiredLeases,
} from "./claim.ts";
import { attemptEvent, loadAttemptInputs, prepareAttemptLoads } from "./deliver.ts";
import { claimGatedEvents } from "./gate.ts";
import { runNotificationJob } from "./notify.ts";
import { createAttemptRecorder } from "./record.ts";
import { failJob, runReplayJob } from "./replay.ts";
import { checkSilentRoutes, SILENT_CHECK_MS } from "./silent-routes.ts";

/** Options of {@link startWorker}. */
export interface WorkerOptions {
  /**
   * Requests in flight at once; default `config.workerConcurrency`. The worker holds up to a quarter
   * more events than that, claimed and loaded ahead, each waiting for a slot. An attempt holds its slot
   * until its request is over; its result then waits for the recorder (record.ts, which writes the
   * results that finish meanwhile in one statement) without holding the slot, so the next request
   * does not wait for that write. While `concurrency` results are already waiting for the recorder, an
   * attempt keeps its slot until its own result is written: a database slower than the endpoints slows
   * the requests down instead of piling results up. So does an attempt whose body is
   * {@link EARLY_FREE_MAX_BODY} or longer, so large bodies held at once stay bounded by the slots.
   */
  concurrency?: number;
  /** Fallback poll interval; default 1000 ms. */
  pollMs?: number;
  /** Lease length; default `config.workerLeaseMs` (120 s, longer than the longest attempt: 60 s timeout). */
  leaseMs?: number;
  /** Stale-lease sweep interval; default the lease length, at most 60 s. */
  sweepMs?: number;
  /** Lease owner id; default host:pid:random. */
  owner?: string;
  /** How often silent routes are looked for (`route.silent`); default 60 s. */
  silentCheckMs?: number;
}

/** A running worker. */
export interface RunningWorker {
  owner: string;
  /** Stops claiming, waits for in-flight attempts, releases unstarted claims. */
  stop(): Promise<void>;
}

const JOB_BATCH = 10;

/**
 * How often the gated endpoints (gate.ts) are looked at while none is gated: a paused endpoint or an
 * opened circuit is noticed within this long by every worker; while one is gated, every pump looks.
 */
const GATE_IDLE_CHECK_MS = 250;

/**
 * Bodies from this length on keep their attempt's slot until the result is written: a result waiting
 * for the recorder holds its body (and the request capture), so only small ones may wait in numbers
 * while new requests go; a large one waits in its slot, as many as there are slots, as before.
 */
export const EARLY_FREE_MAX_BODY = 64 * 1024;

/**
 * Whether an attempt whose request is over gives its slot back before its result is written: when
 * fewer than `concurrency` results already wait for the recorder and its body is small.
 */
export function freesSlotEarly(pending: number, concurrency: number, bodyLength: number): boolean {
  return pending < concurrency && bodyLength < EARLY_FREE_MAX_BODY;
}

/** Starts a worker on `ctx`; see the module comment. */
export async function startWorker(ctx: AppContext, opts: WorkerOptions = {}): Promise<RunningWorker> {
  const concurrency = Math.max(1, opts.concurrency ?? ctx.config.workerConcurrency);
  const pollMs = opts.pollMs ?? 1000;
  const leaseMs = opts.leaseMs ?? ctx.config.workerLeaseMs;
  // An identity, not behaviour: it must differ between workers even when a test fixes `ctx.random`.
  const owner = opts.owner ?? `${hostname()}:${process.pid}:${randomToken(6)}`;
  // Claim again once this many slots are free, so a busy worker claims in batches, not one by one.
  const refillAt = Math.max(1, Math.floor(concurrency / 4));
  // Events held at most: the slots, and one refill's worth more, claimed and loaded while the slots
  // are still busy, so a slot that frees up starts its next request at once instead of waiting for a
  // claim and the batch's loads (two round trips; in the delivery bench they were most of the time
  // between one request of a slot and the next).
  const capacity = concurrency + refillAt;
  const log = ctx.logger;
  const recorder = createAttemptRecorder(ctx.database, owner);
  const loads = prepareAttemptLoads(ctx.database.db);

  let stopping = false;
  // events claimed and not given back yet: waiting for a slot, in their request, or (recorder behind)
  // waiting for their result's write
  let held = 0;
  // slots taken, and the events waiting for one (in claim order)
  let sending = 0;
  const slotWaiters: (() => void)[] = [];
  const batches = new Set<Promise<void>>();
  let pumping: Promise<void> | null = null;
  let again = false;
  // Replay jobs are looked for on every poll and on a "jobs" notification, not on every event wake-up,
  // so the ingest → delivery path costs no extra round trip.
  let jobsWanted = true;
  let gatedSeen = true;
  let gateCheckedAt = Number.NEGATIVE_INFINITY;
  let soonTimer: ReturnType<typeof setTimeout> | undefined;
  let soonAt = Number.POSITIVE_INFINITY;

  /** Claims and starts work until nothing more is due or every slot is busy. Never runs twice at once. */
  const pump = (): void => {
    if (stopping) return;
    if (pumping) {
      again = true;
      return;
    }
    // `.finally` runs after this assignment even when the drain finishes without awaiting (all slots
    // busy), so `pumping` can never be left pointing at a settled drain.
    pumping = (async () => {
      try {
        do {
          again = false;
          if (jobsWanted) {
            jobsWanted = false;
            await runJobs();
          }
          while (!stopping && capacity - held > 0) {
            const free = capacity - held;
            const batch = await claimDueEvents(ctx.database, {
              owner,
              limit: free,
              leaseMs,
              now: ctx.clock.now(),
            });
            if (batch.length > 0) startBatch(batch);
            if (batch.length < free) break;
          }
          // Real elapsed time, not the injectable clock: this paces queries, it decides nothing.
          const tick = performance.now();
          if (!stopping && capacity - held > 0 && (gatedSeen || tick - gateCheckedAt >= GATE_IDLE_CHECK_MS)) {
            gateCheckedAt = tick;
            const gate = await claimGatedEvents(ctx, {
              owner,
              limit: capacity - held,
              leaseMs,
              now: ctx.clock.now(),
            });
            gatedSeen = gate.gated;
            if (gate.events.length > 0) startBatch(gate.events);
            if (gate.wakeAtMs !== null) wakeAt(gate.wakeAtMs);
          }
        } while (again && !stopping);
      } catch (err) {
        log.error("worker claim failed", { error: String(err) });
      }
    })().finally(() => {
      pumping = null;
      if (again && !stopping) pump();
    });
  };

  const runJobs = async (): Promise<void> => {
    const jobs = await claimDueJobs(ctx.database, { owner, limit: JOB_BATCH, leaseMs, now: ctx.clock.now() });
    for (const job of jobs) {
      // A notification waits on someone else's endpoint (up to its timeout): sent in the background so
      // it never holds up the claiming of deliveries or other jobs; stop() waits for it like an attempt.
      if (job.kind === "notification") {
        track(
          runNotificationJob(ctx, job, owner).then(
            () => {},
            async (err) => {
              log.error("notification job failed", { job_id: job.id, error: String(err) });
              await failJob(ctx.database, job, owner, String(err), ctx.clock.now()).catch(() => {});
            },
          ),
        );
        continue;
      }
      try {
        if (job.kind === "replay_event") await runReplayJob(ctx, job, owner);
        else if (job.kind === "bulk_replay") await runBulkReplayChunk(ctx, job, owner);
        else await failJob(ctx.database, job, owner, `unknown job kind ${job.kind}`, ctx.clock.now());
      } catch (err) {
        log.error("job failed", { job_id: job.id, error: String(err) });
        // A bulk replay resumes from its cursor when retried; one that keeps failing is marked failed.
        if (job.kind === "bulk_replay" && job.attempts >= 5)
          await failBulkReplay(ctx, job, owner, String(err)).catch(() => {});
        else await failJob(ctx.database, job, owner, String(err), ctx.clock.now()).catch(() => {});
      }
    }
    if (jobs.length === JOB_BATCH) {
      jobsWanted = true;
      again = true;
      // Let I/O run before the next batch: on the embedded database every query resolves on this
      // thread, and a long run of jobs (a bulk replay queues one per event) would otherwise starve the
      // responses of the attempts in flight until they time out.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  };

  /** Takes a slot, waiting for one while all are busy; false when the worker stopped meanwhile. */
  const takeSlot = async (): Promise<boolean> => {
    if (sending < concurrency) sending++;
    else await new Promise<void>((resolve) => slotWaiters.push(resolve)); // handed over by giveSlot
    if (!stopping) return true;
    giveSlot();
    return false;
  };
  /** Gives a slot back: to the event waiting longest for one, else to the pool. */
  const giveSlot = (): void => {
    const next = slotWaiters.shift();
    if (next) next();
    else sending--;
  };

  const startBatch = (batch: ClaimedEvent[]): void => {
    held += batch.length;
    // When the batch's leases were taken: an event that waited for a slot past half its lease gives
    // the lease back unsent rather than start a request (up to the endpoint's 60 s timeout) that could
    // outlast it, after which another worker could claim the event and send it again.
    const claimedAt = ctx.clock.now().getTime();
    const done = (n: number) => {
      const before = capacity - held;
      held -= n;
      if (before < refillAt && capacity - held >= refillAt) pump();
    };
    const p: Promise<void> = (async () => {
      const started = new Set<string>();
      try {
        const inputs = await loadAttemptInputs(loads, batch, ctx);
        await Promise.all(
          batch.map(async (event) => {
            if (stopping || !(await takeSlot())) return; // released below
            if (ctx.clock.now().getTime() - claimedAt > leaseMs / 2) {
              giveSlot();
              return; // released below, and claimed again with a fresh lease
            }
            // A rate-limited endpoint's event waits for its send time (gate.ts), at most about a second.
            const wait = (event.notBeforeMs ?? 0) - ctx.clock.now().getTime();
            if (wait > 0 && !stopping) await Bun.sleep(wait);
            if (stopping) {
              giveSlot();
              return; // released below
            }
            started.add(event.id);
            let freed = false;
            const free = () => {
              if (freed) return;
              freed = true;
              giveSlot();
              done(1);
            };
            // The slot is free once the request is over, while the result waits for the recorder
            // (see `concurrency`), unless the recorder is that far behind already or the body is large.
            const sent = (bodyLength: number) => {
              if (freesSlotEarly(recorder.pending(), concurrency, bodyLength)) free();
            };
            try {
              const report = await attemptEvent(ctx, event, inputs, owner, recorder, sent);
              if (report.kind === "attempted" && report.nextAttemptAt) wakeAt(report.nextAttemptAt.getTime());
            } catch (err) {
              // The lease stays; the event becomes claimable again when it expires.
              log.error("delivery attempt failed to complete", { event_id: event.id, error: String(err) });
            } finally {
              free();
            }
          }),
        );
      } catch (err) {
        log.error("loading a claimed batch failed", { error: String(err) });
      } finally {
        const ids = batch.filter((e) => !started.has(e.id)).map((e) => e.id);
        if (ids.length > 0) {
          done(ids.length);
          await releaseEventLeases(ctx.database, owner, ids).catch(() => {});
        }
      }
    })();
    track(p);
  };

  /** Keeps `p` among the work `stop()` waits for until it settles. */
  const track = (p: Promise<void>): void => {
    batches.add(p);
    void p.finally(() => batches.delete(p));
  };

  /** A retry due before the next poll gets its own wake-up (attempt 2 is immediate, spec: Limits). */
  const wakeAt = (dueMs: number): void => {
    const now = ctx.clock.now().getTime();
    const delay = Math.max(1, dueMs - now);
    if (stopping || delay >= pollMs) return;
    const at = now + delay;
    if (at >= soonAt) return;
    clearTimeout(soonTimer);
    soonAt = at;
    soonTimer = setTimeout(() => {
      soonAt = Number.POSITIVE_INFINITY;
      pump();
    }, delay);
  };

  const unlisten = await ctx.database.listen(WORK_CHANNEL, (payload) => {
    if (payload === JOBS_NOTIFICATION) jobsWanted = true;
    pump();
  });
  const poll = setInterval(() => {
    jobsWanted = true;
    pump();
  }, pollMs);
  const sweep = setInterval(() => {
    releaseExpiredLeases(ctx.database, ctx.clock.now()).catch((err) =>
      log.warn("lease sweep failed", { error: String(err) }),
    );
  }, opts.sweepMs ?? Math.min(60_000, leaseMs));
  const silent = setInterval(() => {
    checkSilentRoutes(ctx).catch((err) => log.warn("silent route check failed", { error: String(err) }));
  }, opts.silentCheckMs ?? SILENT_CHECK_MS);
  pump();

  return {
    owner,
    async stop() {
      if (stopping) return;
      stopping = true;
      clearInterval(poll);
      clearInterval(sweep);
      clearInterval(silent);
      clearTimeout(soonTimer);
      // Events waiting for a slot give their leases back instead (see startBatch).
      sending += slotWaiters.length;
      for (const resolve of slotWaiters.splice(0)) resolve();
      await unlisten().catch(() => {});
      await pumping;
      while (batches.size > 0) await Promise.all([...batches]);
    },
  };
}
