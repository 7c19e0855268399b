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
import { bytea } from "./columns.ts";
import { projects } from "./projects.ts";

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

/** Postgres `tsvector`, written and read by SQL only (the full-text search index's documents). */
const tsvector = customType<{ data: string; driverData: string }>({
  dataType: () => "tsvector",
});

/**
 * Stored messages waiting to be added to the full-text search index (`message_search`): the intake's
 * statement adds each new message here (one small insert) instead of computing its search document and
 * updating a GIN index on the hot path; the search indexer (services/resources/message-search-index.ts)
 * moves them over in batches. Searches also look through the messages still listed here, so a message
 * is found from the moment it is stored. No foreign key: a row whose message is gone is dropped by the
 * indexer.
 */
export const messageSearchQueue = pgTable("message_search_queue", {
  messagePk: text("message_pk").primaryKey(),
});

/**
 * The full-text search document of a stored message: `mh_message_search(parsed)` (subject, From, To and
 * Cc, and up to 200,000 characters of the text body, `simple` configuration), GIN-indexed. Erasing or
 * deleting a message deletes its document (cascade).
 */
export const messageSearch = pgTable(
  "message_search",
  {
    messagePk: text("message_pk")
      .primaryKey()
      .references(() => messages.id, { onDelete: "cascade" }),
    /** the message's project and arrival time, copied: a search filters and sorts here alone */
    projectId: text("project_id").notNull(),
    receivedAt: timestamp("received_at", { withTimezone: true, precision: 3 }).notNull(),
    document: tsvector("document").notNull(),
  },
  (t) => [
    index("message_search_document_idx").using("gin", t.document),
    // newest first within a project: a word found in most messages is searched by walking this
    // index and testing each document, a rare one through the GIN index
    index("message_search_project_received_idx").on(t.projectId, t.receivedAt, t.messagePk),
  ],
);
