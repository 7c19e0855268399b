/**
 * Sign-out that holds: a session lives in its sealed cookie (session.ts), so signing out also records
 * the session as revoked until its own end. Every signed-in dashboard request checks the record (one
 * primary-key probe), so a copy of the cookie taken before sign-out no longer works. Rows past their
 * session's end are removed by the retention sweep (attachments/retention.ts).
 */
import { eq } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import { uiRevokedSessions } from "../db/schema/index.ts";
import { sha256Hex } from "../lib/ids.ts";
import { SESSION_TTL_MS, type UiSession } from "./session.ts";

/** Records `session` as ended (idempotent). */
export async function revokeSession(ctx: AppContext, session: UiSession): Promise<void> {
  await ctx.database.db
    .insert(uiRevokedSessions)
    .values({ sidHash: sha256Hex(session.sid), expiresAt: new Date(session.issuedAt + SESSION_TTL_MS) })
    .onConflictDoNothing();
}

/** True when `session` was signed out. */
export async function isRevoked(ctx: AppContext, session: UiSession): Promise<boolean> {
  const [row] = await ctx.database.db
    .select({ sidHash: uiRevokedSessions.sidHash })
    .from(uiRevokedSessions)
    .where(eq(uiRevokedSessions.sidHash, sha256Hex(session.sid)))
    .limit(1);
  return row !== undefined;
}
