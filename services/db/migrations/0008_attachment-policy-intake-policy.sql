ALTER TABLE "events" ADD COLUMN "policy_notes" jsonb;--> statement-breakpoint
ALTER TABLE "projects" ADD COLUMN "intake_policy" jsonb;--> statement-breakpoint
ALTER TABLE "routes" ADD COLUMN "attachment_policy" jsonb;