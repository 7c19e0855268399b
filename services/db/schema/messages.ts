import { bigint, boolean, index, jsonb, pgTable, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";
import type { Envelope, NormalizedMessage } from "../../lib/message.ts";
import { projects } from "./projects.ts";

/**
 * A stored inbound message. The raw bytes live in the blob store (`raw_blob_key`); `parsed` is the
 * normalised model (contract §4) minus nothing. (project, message_id, raw_sha256) is unique: the same raw
 * message ingested twice is stored once (contract §3).
 */
export const messages = pgTable(
  "messages",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    messageId: text("message_id").notNull(),
    messageIdIsSynthetic: boolean("message_id_is_synthetic").notNull().default(false),
    rawSha256: text("raw_sha256").notNull(),
    rawBlobKey: text("raw_blob_key").notNull(),
    rawSizeBytes: bigint("raw_size_bytes", { mode: "number" }).notNull(),
    /** bytes accounted to the project's quota for this message (raw + new attachment blobs) */
    storedBytes: bigint("stored_bytes", { mode: "number" }).notNull().default(0),
    sourceType: text("source_type").$type<"smtp" | "api">().notNull(),
    envelope: jsonb("envelope").$type<Envelope | null>(),
    parsed: jsonb("parsed").$type<NormalizedMessage>().notNull(),
    receivedAt: timestamp("received_at", { withTimezone: true, precision: 3 }).notNull(),
  },
  (t) => [
    uniqueIndex("messages_dedupe_idx").on(t.projectId, t.messageId, t.rawSha256),
    index("messages_project_message_id_idx").on(t.projectId, t.messageId),
    index("messages_received_idx").on(t.receivedAt),
    // retention's "is this blob still referenced?" check (services/attachments/retention.ts)
    index("messages_raw_blob_key_idx").on(t.rawBlobKey),
  ],
);
