import { index, pgTable, text, timestamp } from "drizzle-orm/pg-core";
import { projects } from "./projects.ts";

/** Route signing secrets, identified by `kid`; the secret is sealed at rest and shown once. */
export const signingSecrets = pgTable(
  "signing_secrets",
  {
    kid: text("kid").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    secretSealed: text("secret_sealed").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    deletedAt: timestamp("deleted_at", { withTimezone: true, precision: 3 }),
  },
  (t) => [index("signing_secrets_project_idx").on(t.projectId)],
);
