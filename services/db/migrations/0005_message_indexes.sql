DROP INDEX "messages_project_message_id_idx";--> statement-breakpoint
DROP INDEX "messages_raw_blob_key_idx";--> statement-breakpoint
CREATE INDEX "messages_raw_blob_key_idx" ON "messages" USING btree ("raw_blob_key") WHERE "messages"."raw_blob_key" is not null;