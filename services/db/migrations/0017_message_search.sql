CREATE TABLE "message_search" (
	"message_pk" text PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"received_at" timestamp (3) with time zone NOT NULL,
	"document" "tsvector" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "message_search_queue" (
	"message_pk" text PRIMARY KEY NOT NULL
);
--> statement-breakpoint
ALTER TABLE "message_search" ADD CONSTRAINT "message_search_message_pk_messages_id_fk" FOREIGN KEY ("message_pk") REFERENCES "public"."messages"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "message_search_document_idx" ON "message_search" USING gin ("document");--> statement-breakpoint
CREATE INDEX "message_search_project_received_idx" ON "message_search" USING btree ("project_id","received_at","message_pk");