ALTER TABLE "events" ADD COLUMN "body_content_type" text;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "body_encoding" text;