CREATE TABLE "mailbox_uids" (
	"mailbox_id" text NOT NULL,
	"uidvalidity" bigint NOT NULL,
	"uid" bigint NOT NULL,
	"message_pk" text,
	"refusal" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "mailbox_uids_mailbox_id_uidvalidity_uid_pk" PRIMARY KEY("mailbox_id","uidvalidity","uid")
);
--> statement-breakpoint
CREATE TABLE "mailboxes" (
	"id" text PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"name" text NOT NULL,
	"host" text NOT NULL,
	"port" integer NOT NULL,
	"tls" text NOT NULL,
	"auth_user" text NOT NULL,
	"auth_kind" text NOT NULL,
	"auth_sealed" text NOT NULL,
	"folder" text NOT NULL,
	"since" timestamp (3) with time zone,
	"sync_from" timestamp (3) with time zone NOT NULL,
	"after_process" text NOT NULL,
	"enabled" boolean NOT NULL,
	"state" text NOT NULL,
	"last_error" text,
	"last_sync_at" timestamp (3) with time zone,
	"uidvalidity" bigint,
	"last_uid" bigint,
	"messages_ingested" bigint DEFAULT 0 NOT NULL,
	"backfill_remaining" integer,
	"sync_requested_at" timestamp (3) with time zone,
	"lease_owner" text,
	"lease_until" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "mailbox_uids" ADD CONSTRAINT "mailbox_uids_mailbox_id_mailboxes_id_fk" FOREIGN KEY ("mailbox_id") REFERENCES "public"."mailboxes"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mailboxes" ADD CONSTRAINT "mailboxes_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "mailboxes_project_idx" ON "mailboxes" USING btree ("project_id");