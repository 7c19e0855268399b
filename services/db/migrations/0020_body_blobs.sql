ALTER TABLE "events" ADD COLUMN "body_blob_key" text;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "body_blob_size" bigint;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "text_blob_key" text;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "html_blob_key" text;--> statement-breakpoint
CREATE INDEX "events_body_blob_key_idx" ON "events" USING btree ("body_blob_key") WHERE "events"."body_blob_key" is not null;--> statement-breakpoint
CREATE INDEX "messages_text_blob_key_idx" ON "messages" USING btree ("text_blob_key") WHERE "messages"."text_blob_key" is not null;--> statement-breakpoint
CREATE INDEX "messages_html_blob_key_idx" ON "messages" USING btree ("html_blob_key") WHERE "messages"."html_blob_key" is not null;