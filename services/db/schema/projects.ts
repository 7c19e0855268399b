import { bigint, jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/** A tenant. `inbound_token` is the local part of its inbound address (`<token>@INBOUND_DOMAIN`). */
export const projects = pgTable("projects", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  inboundToken: text("inbound_token").notNull().unique(),
  /** bytes of attachment and raw-message blobs accounted to this project (quota) */
  storageBytes: bigint("storage_bytes", { mode: "number" }).notNull().default(0),
  /** `{reject, hold}` rules applied to every message before it is stored (docs/routing.md); null: none */
  intakePolicy: jsonb("intake_policy").$type<{ reject: unknown; hold: unknown } | null>(),
  /** where and what operational notifications go (docs/delivery.md, "Notifications"); null: none */
  notifications: jsonb("notifications").$type<{
    endpoint_id: string;
    signing_secret_kid: string;
    types: string[];
  } | null>(),
  createdAt: timestamp("created_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
});
