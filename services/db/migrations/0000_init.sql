CREATE TABLE "api_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"name" text NOT NULL,
	"prefix" text NOT NULL,
	"secret_hash" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"last_used_at" timestamp (3) with time zone,
	"disabled_at" timestamp (3) with time zone,
	CONSTRAINT "api_keys_secret_hash_unique" UNIQUE("secret_hash")
);
--> statement-breakpoint
CREATE TABLE "attachments" (
	"message_pk" text NOT NULL,
	"attachment_id" text NOT NULL,
	"position" integer NOT NULL,
	"blob_key" text NOT NULL,
	"filename" text NOT NULL,
	"content_type" text NOT NULL,
	"size" bigint NOT NULL,
	"sha256" text NOT NULL,
	"is_inline" boolean NOT NULL,
	"content_id" text,
	CONSTRAINT "attachments_message_pk_attachment_id_pk" PRIMARY KEY("message_pk","attachment_id")
);
--> statement-breakpoint
CREATE TABLE "attempts" (
	"id" text PRIMARY KEY NOT NULL,
	"event_id" uuid NOT NULL,
	"number" integer NOT NULL,
	"trigger" text NOT NULL,
	"status" text NOT NULL,
	"http_status" integer NOT NULL,
	"latency_ms" integer NOT NULL,
	"request_capture" jsonb NOT NULL,
	"response_capture" jsonb NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "download_tokens" (
	"token_hash" text PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"message_pk" text NOT NULL,
	"attachment_id" text NOT NULL,
	"multi_use" boolean NOT NULL,
	"expires_at" timestamp (3) with time zone NOT NULL,
	"used_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "endpoints" (
	"id" text PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"url" text NOT NULL,
	"headers_sealed" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"secret_headers" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"timeout_s" integer DEFAULT 10 NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "events" (
	"id" uuid PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"message_pk" text NOT NULL,
	"route_id" text NOT NULL,
	"status" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"budget_start" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"next_attempt_at" timestamp (3) with time zone,
	"idempotency_key" text NOT NULL,
	"route_snapshot" jsonb NOT NULL,
	"body" text,
	"lease_owner" text,
	"lease_expires_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "jobs" (
	"id" text PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"project_id" text NOT NULL,
	"payload" jsonb NOT NULL,
	"run_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"lease_owner" text,
	"lease_expires_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "messages" (
	"id" text PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"message_id" text NOT NULL,
	"message_id_is_synthetic" boolean DEFAULT false NOT NULL,
	"raw_sha256" text NOT NULL,
	"raw_blob_key" text NOT NULL,
	"raw_size_bytes" bigint NOT NULL,
	"stored_bytes" bigint DEFAULT 0 NOT NULL,
	"source_type" text NOT NULL,
	"envelope" jsonb,
	"parsed" jsonb NOT NULL,
	"received_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "projects" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"inbound_token" text NOT NULL,
	"storage_bytes" bigint DEFAULT 0 NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "projects_inbound_token_unique" UNIQUE("inbound_token")
);
--> statement-breakpoint
CREATE TABLE "routes" (
	"id" text PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"name" text NOT NULL,
	"endpoint_id" text NOT NULL,
	"signing_secret_kid" text NOT NULL,
	"rule" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"pipeline" jsonb NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "signing_secrets" (
	"kid" text PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"secret_sealed" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp (3) with time zone
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "attachments" ADD CONSTRAINT "attachments_message_pk_messages_id_fk" FOREIGN KEY ("message_pk") REFERENCES "public"."messages"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "attempts" ADD CONSTRAINT "attempts_event_id_events_id_fk" FOREIGN KEY ("event_id") REFERENCES "public"."events"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "download_tokens" ADD CONSTRAINT "download_tokens_message_pk_messages_id_fk" FOREIGN KEY ("message_pk") REFERENCES "public"."messages"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "endpoints" ADD CONSTRAINT "endpoints_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_message_pk_messages_id_fk" FOREIGN KEY ("message_pk") REFERENCES "public"."messages"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "routes" ADD CONSTRAINT "routes_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "routes" ADD CONSTRAINT "routes_endpoint_id_endpoints_id_fk" FOREIGN KEY ("endpoint_id") REFERENCES "public"."endpoints"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "routes" ADD CONSTRAINT "routes_signing_secret_kid_signing_secrets_kid_fk" FOREIGN KEY ("signing_secret_kid") REFERENCES "public"."signing_secrets"("kid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "signing_secrets" ADD CONSTRAINT "signing_secrets_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "api_keys_project_idx" ON "api_keys" USING btree ("project_id");--> statement-breakpoint
CREATE UNIQUE INDEX "attempts_event_number_idx" ON "attempts" USING btree ("event_id","number");--> statement-breakpoint
CREATE INDEX "attempts_event_idx" ON "attempts" USING btree ("event_id");--> statement-breakpoint
CREATE INDEX "download_tokens_expires_idx" ON "download_tokens" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "endpoints_project_idx" ON "endpoints" USING btree ("project_id");--> statement-breakpoint
CREATE INDEX "events_due_idx" ON "events" USING btree ("next_attempt_at") WHERE status in ('pending', 'retry');--> statement-breakpoint
CREATE INDEX "events_project_created_idx" ON "events" USING btree ("project_id","created_at","id");--> statement-breakpoint
CREATE INDEX "events_message_idx" ON "events" USING btree ("message_pk");--> statement-breakpoint
CREATE INDEX "events_lease_idx" ON "events" USING btree ("lease_expires_at") WHERE lease_owner is not null;--> statement-breakpoint
CREATE INDEX "jobs_run_at_idx" ON "jobs" USING btree ("run_at");--> statement-breakpoint
CREATE UNIQUE INDEX "messages_dedupe_idx" ON "messages" USING btree ("project_id","message_id","raw_sha256");--> statement-breakpoint
CREATE INDEX "messages_project_message_id_idx" ON "messages" USING btree ("project_id","message_id");--> statement-breakpoint
CREATE INDEX "messages_received_idx" ON "messages" USING btree ("received_at");--> statement-breakpoint
CREATE INDEX "routes_project_idx" ON "routes" USING btree ("project_id");--> statement-breakpoint
CREATE INDEX "signing_secrets_project_idx" ON "signing_secrets" USING btree ("project_id");