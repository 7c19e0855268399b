import { index, pgTable, text, timestamp } from "drizzle-orm/pg-core";
import { projects } from "./projects.ts";

/** API keys are stored only as SHA-256 hashes (they carry 256 random bits, so no slow KDF is needed). */
export const apiKeys = pgTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    /** first characters of the secret, for recognising a key in lists */
    prefix: text("prefix").notNull(),
    secretHash: text("secret_hash").notNull().unique(),
    createdAt: timestamp("created_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    lastUsedAt: timestamp("last_used_at", { withTimezone: true, precision: 3 }),
    disabledAt: timestamp("disabled_at", { withTimezone: true, precision: 3 }),
  },
  (t) => [index("api_keys_project_idx").on(t.projectId)],
);
