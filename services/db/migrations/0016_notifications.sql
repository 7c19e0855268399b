ALTER TABLE "projects" ADD COLUMN "notifications" jsonb;--> statement-breakpoint
ALTER TABLE "routes" ADD COLUMN "expect_mail_within" text;--> statement-breakpoint
ALTER TABLE "routes" ADD COLUMN "silent_notified_at" timestamp (3) with time zone;--> statement-breakpoint
CREATE INDEX "events_route_created_idx" ON "events" USING btree ("route_id","created_at");