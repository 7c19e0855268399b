import { bigint, boolean, index, integer, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { messages } from "./messages.ts";

/** One extracted attachment of a message; bytes in the blob store under `blob_key` (content-addressed). */
export const attachments = pgTable(
  "attachments",
  {
    messagePk: text("message_pk")
      .notNull()
      .references(() => messages.id, { onDelete: "cascade" }),
    /** descriptor `id`, stable within the message */
    attachmentId: text("attachment_id").notNull(),
    position: integer("position").notNull(),
    blobKey: text("blob_key").notNull(),
    filename: text("filename").notNull(),
    contentType: text("content_type").notNull(),
    size: bigint("size", { mode: "number" }).notNull(),
    sha256: text("sha256").notNull(),
    isInline: boolean("is_inline").notNull(),
    contentId: text("content_id"),
  },
  (t) => [
    primaryKey({ columns: [t.messagePk, t.attachmentId] }),
    // retention's "is this blob still referenced?" check (services/attachments/retention.ts)
    index("attachments_blob_key_idx").on(t.blobKey),
  ],
);
