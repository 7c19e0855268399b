ALTER TABLE "mailbox_uids" ADD COLUMN "raw" "bytea";--> statement-breakpoint
ALTER TABLE "mailboxes" ADD COLUMN "messages_pending" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "mailbox_uids_staged_idx" ON "mailbox_uids" USING btree ("mailbox_id","uidvalidity","uid") WHERE "mailbox_uids"."raw" is not null;