import { sql } from "drizzle-orm";
import { bigint, boolean, index, integer, pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";
import { bytea } from "./columns.ts";
import { projects } from "./projects.ts";

/** How the IMAP connection is secured. */
export type MailboxTls = "implicit" | "starttls" | "none";
/** What the poller reports it is doing (docs/ingest.md, "IMAP mailboxes"). */
export type MailboxState = "connecting" | "idle" | "syncing" | "error" | "disabled";

/**
 * An IMAP mailbox a project's mail is fetched from. The credential (password or OAuth access token) is
 * sealed at rest and never shown. The poller holding the lease (`lease_owner` until `lease_until`) is the
 * only one fetching from it; it renews the lease while connected, and another process takes over once
 * the lease has run out. `uidvalidity` and `last_uid` are the position reached in the folder: every UID
 * up to `last_uid` under that UIDVALIDITY has been taken in (or was there before the mailbox was added).
 */
export const mailboxes = pgTable(
  "mailboxes",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    host: text("host").notNull(),
    port: integer("port").notNull(),
    tls: text("tls").$type<MailboxTls>().notNull(),
    authUser: text("auth_user").notNull(),
    /** "password" or "access_token" */
    authKind: text("auth_kind").$type<"password" | "access_token">().notNull(),
    authSealed: text("auth_sealed").notNull(),
    folder: text("folder").notNull(),
    /** backfill start; null: only mail that arrives after `created_at` */
    since: timestamp("since", { withTimezone: true, precision: 3 }),
    /**
     * the arrival time (INTERNALDATE) from which a first sync of the folder, or a re-sync after a
     * UIDVALIDITY change, takes mail: `since`, else the time the mailbox (or its folder) was set
     */
    syncFrom: timestamp("sync_from", { withTimezone: true, precision: 3 }).notNull(),
    afterProcess: text("after_process").notNull(),
    enabled: boolean("enabled").notNull(),
    state: text("state").$type<MailboxState>().notNull(),
    lastError: text("last_error"),
    lastSyncAt: timestamp("last_sync_at", { withTimezone: true, precision: 3 }),
    uidvalidity: bigint("uidvalidity", { mode: "number" }),
    lastUid: bigint("last_uid", { mode: "number" }),
    messagesIngested: bigint("messages_ingested", { mode: "number" }).notNull().default(0),
    /** UIDs left in the running backfill, null when none is running */
    backfillRemaining: integer("backfill_remaining"),
    /** messages fetched into `mailbox_uids.raw` and not processed yet (kept with the rows it counts) */
    messagesPending: integer("messages_pending").notNull().default(0),
    /** set by `POST …/sync`; the poller syncs when it is later than its last sync */
    syncRequestedAt: timestamp("sync_requested_at", { withTimezone: true, precision: 3 }),
    leaseOwner: text("lease_owner"),
    leaseUntil: timestamp("lease_until", { withTimezone: true, precision: 3 }),
    createdAt: timestamp("created_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [index("mailboxes_project_idx").on(t.projectId)],
);

/**
 * Each (mailbox, UIDVALIDITY, UID) taken in, once: the poller skips a UID recorded here, so a message is
 * ingested at most once across restarts and processes (a repeat after a crash between the ingest and
 * this row is deduplicated by its bytes). `message_pk` is the stored message, null when it was refused
 * for good (`refusal` says why; the message stays on the server).
 *
 * `raw` holds the bytes of a message fetched but not processed yet (a large sync is first fetched into
 * this table, then processed from it: ingest/imap.ts); it is cleared when the message is processed, so
 * a row with `raw` set is "staged".
 */
export const mailboxUids = pgTable(
  "mailbox_uids",
  {
    mailboxId: text("mailbox_id")
      .notNull()
      .references(() => mailboxes.id, { onDelete: "cascade" }),
    uidvalidity: bigint("uidvalidity", { mode: "number" }).notNull(),
    uid: bigint("uid", { mode: "number" }).notNull(),
    messagePk: text("message_pk"),
    refusal: text("refusal"),
    raw: bytea("raw"),
    createdAt: timestamp("created_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.mailboxId, t.uidvalidity, t.uid] }),
    index("mailbox_uids_staged_idx").on(t.mailboxId, t.uidvalidity, t.uid).where(sql`${t.raw} is not null`),
  ],
);
