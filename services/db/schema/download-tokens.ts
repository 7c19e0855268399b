import { boolean, index, pgTable, text, timestamp } from "drizzle-orm/pg-core";
import { messages } from "./messages.ts";

/** Attachment download tokens, stored only as SHA-256 hashes of the 256-bit token. */
export const downloadTokens = pgTable(
  "download_tokens",
  {
    tokenHash: text("token_hash").primaryKey(),
    projectId: text("project_id").notNull(),
    messagePk: text("message_pk")
      .notNull()
      .references(() => messages.id, { onDelete: "cascade" }),
    attachmentId: text("attachment_id").notNull(),
    multiUse: boolean("multi_use").notNull(),
    expiresAt: timestamp("expires_at", { withTimezone: true, precision: 3 }).notNull(),
    usedAt: timestamp("used_at", { withTimezone: true, precision: 3 }),
    createdAt: timestamp("created_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [index("download_tokens_expires_idx").on(t.expiresAt)],
);
