ALTER TABLE "events" ADD COLUMN "body_blob_key" text;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "body_blob_size" bigint;--> statement-breakpoint
CREATE INDEX "events_body_blob_key_idx" ON "events" USING btree ("body_blob_key") WHERE "events"."body_blob_key" is not null;