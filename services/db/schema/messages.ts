import { sql } from "drizzle-orm";
import {
  bigint,
  boolean,
  check,
  customType,
  index,
  jsonb,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
} from "drizzle-orm/pg-core";
import type { Envelope, NormalizedMessage, SourceType } from "../../lib/message.ts";
import { projects } from "./projects.ts";

/** Postgres `bytea`, read and written as bytes. */
const bytea = customType<{ data: Uint8Array; driverData: Uint8Array }>({
  dataType: () => "bytea",
});

/**
 * A stored inbound message. The raw bytes are kept in exactly one place: in the row (`raw_bytes`) for a
 * message up to `INLINE_RAW_MAX_BYTES` (services/ingest/raw.ts), committed with the row, so a small
 * message costs no file and no fsync; in the blob store (`raw_blob_key`) for a larger one. `parsed` is the
 * normalised model (docs/routing.md) minus nothing. (project, message_id, raw_sha256) is unique: the same raw
 * message ingested twice is stored once (docs/ingest.md).
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
    /** the raw message's blob, or null when the bytes are in `raw_bytes` */
    rawBlobKey: text("raw_blob_key"),
    /** the raw message itself when small enough to live in the row, else null */
    rawBytes: bytea("raw_bytes"),
    rawSizeBytes: bigint("raw_size_bytes", { mode: "number" }).notNull(),
    /** bytes accounted to the project's quota for this message (raw + new attachment blobs) */
    storedBytes: bigint("stored_bytes", { mode: "number" }).notNull().default(0),
    sourceType: text("source_type").$type<SourceType>().notNull(),
    envelope: jsonb("envelope").$type<Envelope | null>(),
    parsed: jsonb("parsed").$type<NormalizedMessage>().notNull(),
    /**
     * A text body too large for `parsed` (services/ingest/body-blobs.ts): its UTF-8 bytes' blob; `parsed.text`
     * then holds only its beginning. Null when `parsed.text` is the whole body.
     */
    textBlobKey: text("text_blob_key"),
    /** the same for the HTML body (`parsed.html`) */
    htmlBlobKey: text("html_blob_key"),
    receivedAt: timestamp("received_at", { withTimezone: true, precision: 3 }).notNull(),
  },
  (t) => [
    // Also serves lookups by (project, Message-ID): a separate index on that prefix only cost an insert.
    uniqueIndex("messages_dedupe_idx").on(t.projectId, t.messageId, t.rawSha256),
    index("messages_received_idx").on(t.receivedAt),
    // retention's "is this blob still referenced?" check (services/attachments/retention.ts); a message
    // whose raw bytes are in its row has no key and no entry
    index("messages_raw_blob_key_idx").on(t.rawBlobKey).where(sql`${t.rawBlobKey} is not null`),
    index("messages_text_blob_key_idx").on(t.textBlobKey).where(sql`${t.textBlobKey} is not null`),
    index("messages_html_blob_key_idx").on(t.htmlBlobKey).where(sql`${t.htmlBlobKey} is not null`),
    check("messages_raw_in_one_place", sql`(${t.rawBlobKey} is null) <> (${t.rawBytes} is null)`),
  ],
);
