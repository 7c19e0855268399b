-- A domain may be claimed by several projects while unverified; the first to verify owns it (its
-- `_mailhook.<domain>` TXT record carries that claim's token). Each row gets a token, existing rows a
-- random one: they stay verified, and show the TXT record to set before their next check.
DROP INDEX "domains_domain_key";--> statement-breakpoint
DROP INDEX "domains_project_idx";--> statement-breakpoint
ALTER TABLE "domains" ADD COLUMN "verification_token" text;--> statement-breakpoint
UPDATE "domains" SET "verification_token" = replace(gen_random_uuid()::text, '-', '');--> statement-breakpoint
ALTER TABLE "domains" ALTER COLUMN "verification_token" SET NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "domains_project_domain_key" ON "domains" USING btree ("project_id","domain");--> statement-breakpoint
CREATE UNIQUE INDEX "domains_verified_domain_key" ON "domains" USING btree ("domain") WHERE "domains"."verified";
