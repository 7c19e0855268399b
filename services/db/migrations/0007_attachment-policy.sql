ALTER TABLE "events" ADD COLUMN "policy_notes" jsonb;--> statement-breakpoint
ALTER TABLE "routes" ADD COLUMN "attachment_policy" jsonb;