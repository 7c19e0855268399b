import { sql } from "drizzle-orm";
import {
  boolean,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  text,
  timestamp,
} from "drizzle-orm/pg-core";
import { projects } from "./projects.ts";

/**
 * The endpoints whose due events are claimed one endpoint at a time, under that endpoint's lock
 * (delivery/gate.ts): paused, a circuit not closed or counting failures, or a limit set. The text is the
 * predicate of `endpoints_gated_idx`, repeated verbatim by the claims so the planner uses that index.
 */
export const GATED_ENDPOINT_PREDICATE =
  "deleted_at is null and (paused or circuit_state <> 'closed' or consecutive_failures > 0 or rate_limit_per_s is not null or max_in_flight is not null)";

/** A webhook destination. Custom header values are sealed (AES-256-GCM) at rest. */
export const endpoints = pgTable(
  "endpoints",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    url: text("url").notNull(),
    /** name → sealed value */
    headersSealed: jsonb("headers_sealed").$type<Record<string, string>>().notNull().default({}),
    /** lowercase header names whose values are masked in responses and attempt captures */
    secretHeaders: jsonb("secret_headers").$type<string[]>().notNull().default([]),
    timeoutS: integer("timeout_s").notNull().default(10),
    /** set by the user: due events wait (`endpoint_paused`) until it is cleared */
    paused: boolean("paused").notNull().default(false),
    /** the circuit breaker (delivery/circuit.ts): closed, open (failing; probed) or half_open (a probe is out) */
    circuitState: text("circuit_state").$type<"closed" | "open" | "half_open">().notNull().default("closed"),
    circuitSince: timestamp("circuit_since", { withTimezone: true, precision: 3 }),
    consecutiveFailures: integer("consecutive_failures").notNull().default(0),
    /** open: when the next probe may go; half_open: when the probe out is given up as lost */
    circuitProbeAt: timestamp("circuit_probe_at", { withTimezone: true, precision: 3 }),
    /** the wait between probes while open: 1 min, doubling to 30 min */
    circuitIntervalMs: integer("circuit_interval_ms").notNull().default(60_000),
    /** attempts started per second across all workers; null = unlimited */
    rateLimitPerS: doublePrecision("rate_limit_per_s"),
    /** the token bucket of `rate_limit_per_s` */
    rateTokens: doublePrecision("rate_tokens"),
    rateRefilledAt: timestamp("rate_refilled_at", { withTimezone: true, precision: 3 }),
    /** attempts in flight at once across all workers; null = unlimited */
    maxInFlight: integer("max_in_flight"),
    createdAt: timestamp("created_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    deletedAt: timestamp("deleted_at", { withTimezone: true, precision: 3 }),
  },
  (t) => [
    index("endpoints_project_idx").on(t.projectId),
    // The endpoints whose events are claimed one endpoint at a time (delivery/gate.ts); usually none.
    index("endpoints_gated_idx").on(t.id).where(sql.raw(GATED_ENDPOINT_PREDICATE)),
  ],
);
