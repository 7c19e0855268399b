ALTER TABLE "attempts" ADD COLUMN "endpoint_id" text;--> statement-breakpoint
ALTER TABLE "endpoints" ADD COLUMN "paused" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "endpoints" ADD COLUMN "circuit_state" text DEFAULT 'closed' NOT NULL;--> statement-breakpoint
ALTER TABLE "endpoints" ADD COLUMN "circuit_since" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "endpoints" ADD COLUMN "consecutive_failures" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "endpoints" ADD COLUMN "circuit_probe_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "endpoints" ADD COLUMN "circuit_interval_ms" integer DEFAULT 60000 NOT NULL;--> statement-breakpoint
ALTER TABLE "endpoints" ADD COLUMN "rate_limit_per_s" double precision;--> statement-breakpoint
ALTER TABLE "endpoints" ADD COLUMN "rate_tokens" double precision;--> statement-breakpoint
ALTER TABLE "endpoints" ADD COLUMN "rate_refilled_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "endpoints" ADD COLUMN "max_in_flight" integer;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "endpoint_id" text GENERATED ALWAYS AS (route_snapshot->>'endpoint_id') STORED;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "status" text DEFAULT 'queued' NOT NULL;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "total" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "done" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "skipped" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "jobs" ADD COLUMN "finished_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "routes" ADD COLUMN "retry_policy" jsonb;--> statement-breakpoint
CREATE INDEX "attempts_endpoint_created_idx" ON "attempts" USING btree ("endpoint_id","created_at");--> statement-breakpoint
CREATE INDEX "endpoints_gated_idx" ON "endpoints" USING btree ("id") WHERE deleted_at is null and (paused or circuit_state <> 'closed' or consecutive_failures > 0 or rate_limit_per_s is not null or max_in_flight is not null);--> statement-breakpoint
CREATE INDEX "events_endpoint_due_idx" ON "events" USING btree ("endpoint_id","next_attempt_at") WHERE status in ('pending', 'retry');