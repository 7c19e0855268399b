/**
 * Jobs that ended, on PGlite and Postgres: the retention sweeper removes `done` and `failed` jobs
 * (bulk replays, notifications given up) `JOB_RETENTION_DAYS` after they ended and never touches a job
 * still queued or running; and a bulk replay whose worker died mid-run is resumed by another worker
 * once the lease expires, from its cursor, while the dead worker's late write changes nothing. Time is
 * a manual clock; no worker runs — the tests claim and run jobs themselves.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { sweepRetention } from "../../services/attachments/retention.ts";
import { BULK_REPLAY_CHUNK, runBulkReplayChunk } from "../../services/delivery/bulk-replay.ts";
import { type ClaimedJob, claimDueJobs } from "../../services/delivery/claim.ts";
import { manualClock } from "../../services/lib/clock.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { seedEvents, seedRoute } from "../support/seed-events.ts";

const DAY = 24 * 3600 * 1000;
const LEASE_MS = 60_000;

for (const kind of testDbKinds()) {
  describe(`jobs retention and resumption (${kind})`, () => {
    let app: TestApp;
    const clock = manualClock(new Date("2026-06-01T00:00:00Z"));

    beforeAll(async () => {
      app = await createTestApp(kind, { clock, env: { JOB_RETENTION_DAYS: "3" } });
    }, 180_000);
    afterAll(async () => {
      await app.close();
    });

    const ago = (days: number) => new Date(clock.now().getTime() - days * DAY).toISOString();

    async function insertJob(
      id: string,
      projectId: string,
      kind: string,
      status: string,
      endedDaysAgo: number | null,
    ) {
      const created = ago(30);
      await app.ctx.database.rows(sql`
        insert into jobs (id, kind, project_id, payload, run_at, attempts, created_at, status, finished_at)
        values (${id}, ${kind}, ${projectId}, '{}'::jsonb, ${created}::timestamptz, 0, ${created}::timestamptz,
          ${status}, ${endedDaysAgo === null ? null : ago(endedDaysAgo)}::timestamptz)`);
    }

    async function jobIds(projectId: string): Promise<string[]> {
      const rows = await app.ctx.database.rows<{ id: string }>(
        sql`select id from jobs where project_id = ${projectId} order by id`,
      );
      return rows.map((r) => r.id);
    }

    test("ended jobs leave JOB_RETENTION_DAYS after they ended; queued and running ones stay however old", async () => {
      expect(app.ctx.config.jobRetentionDays).toBe(3);
      const p = await app.newProject();
      await insertJob("job_a_bulk_done_old", p.id, "bulk_replay", "done", 4);
      await insertJob("job_b_bulk_failed_old", p.id, "bulk_replay", "failed", 3.1);
      await insertJob("job_c_ntf_failed_old", p.id, "notification", "failed", 10);
      await insertJob("job_d_bulk_done_recent", p.id, "bulk_replay", "done", 2.9);
      await insertJob("job_e_ntf_failed_recent", p.id, "notification", "failed", 1);
      await insertJob("job_f_bulk_running", p.id, "bulk_replay", "running", null);
      await insertJob("job_g_ntf_queued", p.id, "notification", "queued", null);
      await insertJob("job_h_replay_queued", p.id, "replay_event", "queued", null);

      const first = await sweepRetention(app.ctx, { now: clock.now() });
      expect(first.jobsDeleted).toBe(3);
      expect(await jobIds(p.id)).toEqual([
        "job_d_bulk_done_recent",
        "job_e_ntf_failed_recent",
        "job_f_bulk_running",
        "job_g_ntf_queued",
        "job_h_replay_queued",
      ]);
      // A day later the bulk replay done 2.9 days ago is past the window too; the rest stay.
      clock.advance(DAY);
      const second = await sweepRetention(app.ctx, { now: clock.now() });
      expect(second.jobsDeleted).toBe(1);
      expect(await jobIds(p.id)).toEqual([
        "job_e_ntf_failed_recent",
        "job_f_bulk_running",
        "job_g_ntf_queued",
        "job_h_replay_queued",
      ]);
      // A swept bulk replay is simply not found any more.
      const gone = await app.request("GET", "/v1/jobs/job_a_bulk_done_old", { apiKey: p.apiKey });
      expect(gone.status).toBe(404);
    });

    test("a bulk replay whose worker died mid-run is resumed by another after the lease, from its cursor", async () => {
      const route = await seedRoute(app, { url: "http://127.0.0.1:9/never" });
      const n = BULK_REPLAY_CHUNK + 20;
      await seedEvents(app.ctx, route, { count: n, quiet: true, nextAttemptAt: null });
      await app.ctx.database.rows(sql`
        update events set status = 'delivered', attempts = 1 where route_id = ${route.routeId}`);
      const res = await app.request("POST", "/v1/events/replay", {
        apiKey: route.apiKey,
        body: { filter: { route_id: route.routeId } },
      });
      expect(res.status).toBe(202);
      const jobId: string = res.body.job_id;

      const claimBulk = async (owner: string): Promise<ClaimedJob | undefined> => {
        const claimed = await claimDueJobs(app.ctx.database, {
          owner,
          limit: 10_000,
          leaseMs: LEASE_MS,
          now: clock.now(),
        });
        return claimed.find((j) => j.id === jobId);
      };
      const progress = async () =>
        (await app.request("GET", `/v1/jobs/${jobId}`, { apiKey: route.apiKey })).body as {
          status: string;
          done: number;
          skipped: number;
        };

      // Worker 1 claims the job and dies before its chunk is written.
      const mine = await claimBulk("w1");
      expect(mine?.attempts).toBe(1);
      clock.advance(LEASE_MS / 2);
      expect(await claimBulk("w2")).toBeUndefined(); // the lease still holds
      clock.advance(LEASE_MS);
      const taken = await claimBulk("w2");
      expect(taken?.attempts).toBe(2);
      expect(await runBulkReplayChunk(app.ctx, taken as ClaimedJob, "w2")).toBe(false);
      expect(await progress()).toMatchObject({ status: "running", done: BULK_REPLAY_CHUNK });

      // Worker 1's late write (its lease is gone) changes nothing.
      await runBulkReplayChunk(app.ctx, mine as ClaimedJob, "w1");
      expect(await progress()).toMatchObject({ status: "running", done: BULK_REPLAY_CHUNK });

      // Worker 2 claims the rest from the cursor and finishes: every event queued once.
      const next = await claimBulk("w2");
      expect(next).toBeDefined();
      expect(await runBulkReplayChunk(app.ctx, next as ClaimedJob, "w2")).toBe(true);
      expect(await progress()).toMatchObject({ status: "done", done: n, skipped: 0 });
      // A chunk replays its events itself: each is due again with a fresh budget (none is left behind,
      // none needed a replay job of its own).
      const [replays] = await app.ctx.database.rows<{ due: number; jobs: number }>(sql`
        select (select count(*)::int from events where route_id = ${route.routeId} and status = 'pending'
                  and budget_start = attempts and next_attempt_at is not null) as due,
               (select count(*)::int from jobs where kind = 'replay_event' and project_id = ${route.projectId}) as jobs`);
      expect(replays).toEqual({ due: n, jobs: 0 });
    });
  });
}
