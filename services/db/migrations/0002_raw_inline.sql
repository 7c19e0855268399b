ALTER TABLE "messages" ALTER COLUMN "raw_blob_key" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "raw_bytes" "bytea";--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_raw_in_one_place" CHECK (("messages"."raw_blob_key" is null) <> ("messages"."raw_bytes" is null));