/**
 * The start-up check that `SECRETS_KEY` opens the secrets already sealed in the database (signing
 * secrets, endpoint header values). Every process sharing a database must use the same key; one
 * started with another key (or with a generated `DATA_DIR/secrets.key` because the variable was
 * forgotten) would fail every delivery, so `serve` and `worker` refuse to start instead (main.ts).
 */
import { sql } from "drizzle-orm";
import type { AppContext } from "../context.ts";

/**
 * Tries to open one sealed signing secret and one sealed endpoint header. Returns the problem as one
 * line, or null when the key opens them (or nothing is sealed yet).
 */
export async function secretsKeyProblem(ctx: AppContext): Promise<string | null> {
  const samples = await ctx.database.rows<{ what: string; sealed: string }>(sql`
    (select 'signing secret ' || kid as what, secret_sealed as sealed from signing_secrets limit 1)
    union all
    (select 'a header of endpoint ' || e.id as what, h.value as sealed
      from endpoints e cross join lateral jsonb_each_text(e.headers_sealed) h limit 1)`);
  for (const s of samples) {
    try {
      ctx.box.open(s.sealed);
    } catch {
      return `SECRETS_KEY cannot open the secrets already sealed in the database (${s.what}): start every serve and worker process with the SECRETS_KEY the database was created with`;
    }
  }
  return null;
}
