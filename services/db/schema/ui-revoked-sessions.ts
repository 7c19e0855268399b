import { index, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/**
 * Dashboard sessions ended by sign-out before their cookie expired (services/ui/session.ts). A session
 * lives in its sealed cookie, so without this a copy of the cookie kept working after sign-out for the
 * rest of its 12 hours. Stored as the SHA-256 of the session's `sid` (the sid is the session's CSRF
 * key); a row is useless once `expires_at` (the session's own end) has passed and is swept then.
 */
export const uiRevokedSessions = pgTable(
  "ui_revoked_sessions",
  {
    sidHash: text("sid_hash").primaryKey(),
    expiresAt: timestamp("expires_at", { withTimezone: true, precision: 3 }).notNull(),
  },
  (t) => [index("ui_revoked_sessions_expires_idx").on(t.expiresAt)],
);
