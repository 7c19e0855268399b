import { boolean, index, jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";
import type { AttachmentPolicy } from "../../lib/attachment-policy.ts";
import type { Pipeline } from "../../lib/pipeline.ts";
import { endpoints } from "./endpoints.ts";
import { projects } from "./projects.ts";
import { signingSecrets } from "./signing-secrets.ts";

/** A route: rule (docs/routing.md) + pipeline, delivering to an endpoint signed with a secret. */
export const routes = pgTable(
  "routes",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    endpointId: text("endpoint_id")
      .notNull()
      .references(() => endpoints.id),
    signingSecretKid: text("signing_secret_kid")
      .notNull()
      .references(() => signingSecrets.kid),
    rule: jsonb("rule").$type<Record<string, unknown>>().notNull().default({}),
    pipeline: jsonb("pipeline").$type<Pipeline>().notNull(),
    /**
     * The pipeline's JSON exactly as given, for its key order: `jsonb` sorts object keys (shortest first),
     * so a mapper's output template came back, and was delivered, in another order than written. Null on
     * routes saved before it existed; readers fall back to `pipeline` (services/routing/pipeline.ts).
     */
    pipelineText: text("pipeline_text"),
    /** the route's attachment policy (docs/routing.md); null: the service-wide policy */
    attachmentPolicy: jsonb("attachment_policy").$type<AttachmentPolicy | null>(),
    /**
     * `{schedule, schedule_ms, max_attempts}` (the schedule as written and in ms); null = the global
     * `RETRY_SCHEDULE` (resources/routes.ts validates, delivery/deliver.ts applies)
     */
    retryPolicy: jsonb("retry_policy").$type<{
      schedule: string[];
      schedule_ms: number[];
      max_attempts: number;
    }>(),
    /** `route.silent` after this long without a matching message (the duration as written); null: off */
    expectMailWithin: text("expect_mail_within"),
    /** when `route.silent` was last raised; not raised again until mail matched after it */
    silentNotifiedAt: timestamp("silent_notified_at", { withTimezone: true, precision: 3 }),
    enabled: boolean("enabled").notNull().default(true),
    createdAt: timestamp("created_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    deletedAt: timestamp("deleted_at", { withTimezone: true, precision: 3 }),
  },
  (t) => [index("routes_project_idx").on(t.projectId)],
);
