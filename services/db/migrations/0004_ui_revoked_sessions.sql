CREATE TABLE "ui_revoked_sessions" (
	"sid_hash" text PRIMARY KEY NOT NULL,
	"expires_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "ui_revoked_sessions_expires_idx" ON "ui_revoked_sessions" USING btree ("expires_at");