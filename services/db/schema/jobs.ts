import { index, integer, jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";

export type JobKind = "replay_event" | "bulk_replay" | "notification";

/**
 * Background jobs other than deliveries (replays). Claimed like events, with a lease. A `replay_event`
 * job is deleted when it has run; a `bulk_replay` job stays, with its progress (`status`, `total`,
 * `done`, `skipped`, `finished_at`), for `GET /v1/jobs/{id}`.
 */
export const jobs = pgTable(
  "jobs",
  {
    id: text("id").primaryKey(),
    kind: text("kind").$type<JobKind>().notNull(),
    projectId: text("project_id").notNull(),
    payload: jsonb("payload").$type<Record<string, unknown>>().notNull(),
    runAt: timestamp("run_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    attempts: integer("attempts").notNull().default(0),
    lastError: text("last_error"),
    leaseOwner: text("lease_owner"),
    leaseExpiresAt: timestamp("lease_expires_at", { withTimezone: true, precision: 3 }),
    createdAt: timestamp("created_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    /** queued → running → done | failed; only queued and running jobs are claimed */
    status: text("status").$type<"queued" | "running" | "done" | "failed">().notNull().default("queued"),
    total: integer("total").notNull().default(0),
    done: integer("done").notNull().default(0),
    skipped: integer("skipped").notNull().default(0),
    finishedAt: timestamp("finished_at", { withTimezone: true, precision: 3 }),
  },
  (t) => [index("jobs_run_at_idx").on(t.runAt)],
);
