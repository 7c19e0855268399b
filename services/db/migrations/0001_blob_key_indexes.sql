CREATE INDEX "attachments_blob_key_idx" ON "attachments" USING btree ("blob_key");--> statement-breakpoint
CREATE INDEX "messages_raw_blob_key_idx" ON "messages" USING btree ("raw_blob_key");