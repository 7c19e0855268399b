import { sql } from "drizzle-orm";
import { bigint, index, integer, jsonb, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";
import type { PolicyNote } from "../../lib/attachment-policy.ts";
import { DUE_STATUSES, type EventStatus, statusListSql } from "../../lib/event-status.ts";
import type { Pipeline } from "../../lib/pipeline.ts";
import { messages } from "./messages.ts";
import { projects } from "./projects.ts";

/** The column type of `events.status`; the list is declared once in lib/event-status.ts. */
export type { EventStatus };

/** What the event remembers of its route at creation (and after a replay, of the current route). */
export interface RouteSnapshot {
  route_id: string;
  name: string;
  endpoint_id: string;
  endpoint_url: string;
  kid: string;
  pipeline: Pipeline;
  /** The route's `pipeline_text` (its JSON as written, key order kept); absent on older snapshots. */
  pipeline_text?: string | null;
  /** Set when a replay took this snapshot: the attempts that follow have trigger `replay`. */
  replayed_at?: string;
}

/**
 * One per message per matched route. Claimed by workers through a lease (`lease_owner`,
 * `lease_expires_at`); `budget_start` is the attempt count when the current attempt budget began (a
 * replay grants a fresh budget). `body` is the pipeline output, built once and reused by automatic retries:
 * JSON as text, or a byte body (`map.raw_mime`) as base64 with `body_encoding = 'base64'`;
 * `body_content_type` is what it is sent as (null, in rows written before it was kept: application/json).
 */
export const events = pgTable(
  "events",
  {
    id: uuid("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    /** null once the message was erased (resources/message-erasure.ts): the event stays, its body does not */
    messagePk: text("message_pk").references(() => messages.id, { onDelete: "cascade" }),
    routeId: text("route_id").notNull(),
    status: text("status").$type<EventStatus>().notNull(),
    attempts: integer("attempts").notNull().default(0),
    budgetStart: integer("budget_start").notNull().default(0),
    lastError: text("last_error"),
    nextAttemptAt: timestamp("next_attempt_at", { withTimezone: true, precision: 3 }),
    idempotencyKey: text("idempotency_key").notNull(),
    routeSnapshot: jsonb("route_snapshot").$type<RouteSnapshot>().notNull(),
    /** attachments the route's attachment policy stripped or let through, and why; null when none */
    policyNotes: jsonb("policy_notes").$type<PolicyNote[] | null>(),
    /** the snapshot's endpoint, as a column so the claim and the circuit can find an endpoint's events */
    endpointId: text("endpoint_id").generatedAlwaysAs(sql`route_snapshot->>'endpoint_id'`),
    body: text("body"),
    bodyContentType: text("body_content_type"),
    bodyEncoding: text("body_encoding").$type<"utf8" | "base64">(),
    /**
     * A body of 1 MiB or more is kept in the blob store instead of `body` (delivery/body-store.ts): its
     * blob (the bytes sent) and their size (what it counts in the quota). Null otherwise.
     */
    bodyBlobKey: text("body_blob_key"),
    bodyBlobSize: bigint("body_blob_size", { mode: "number" }),
    leaseOwner: text("lease_owner"),
    leaseExpiresAt: timestamp("lease_expires_at", { withTimezone: true, precision: 3 }),
    createdAt: timestamp("created_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    index("events_due_idx")
      .on(t.nextAttemptAt)
      .where(sql.raw(`status in ${statusListSql(DUE_STATUSES)}`)),
    index("events_endpoint_due_idx")
      .on(t.endpointId, t.nextAttemptAt)
      .where(sql.raw(`status in ${statusListSql(DUE_STATUSES)}`)),
    index("events_project_created_idx").on(t.projectId, t.createdAt, t.id),
    index("events_message_idx").on(t.messagePk),
    // the last message a route matched, for `route.silent`
    index("events_route_created_idx").on(t.routeId, t.createdAt),
    // retention's "is this blob still referenced?" check (services/attachments/retention.ts)
    index("events_body_blob_key_idx").on(t.bodyBlobKey).where(sql`${t.bodyBlobKey} is not null`),
    index("events_lease_idx").on(t.leaseExpiresAt).where(sql`lease_owner is not null`),
  ],
);
