import { index, integer, jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";
import { projects } from "./projects.ts";

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
    createdAt: timestamp("created_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    deletedAt: timestamp("deleted_at", { withTimezone: true, precision: 3 }),
  },
  (t) => [index("endpoints_project_idx").on(t.projectId)],
);
