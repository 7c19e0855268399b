/** Route signing secrets (`whsec_…`), identified by `kid`, sealed at rest, shown once at creation. */
import { type Static, Type } from "@sinclair/typebox";
import { and, asc, eq, isNull } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import { routes, signingSecrets } from "../db/schema/index.ts";
import { AppError } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import { Timestamp } from "../lib/schema.ts";
import { newSigningSecret } from "../lib/signing.ts";

/** A signing secret as listed: its `kid`, never the secret. */
export const SigningSecretViewSchema = Type.Object({ kid: Type.String(), created_at: Timestamp });
/** See {@link SigningSecretViewSchema}. */
export type SigningSecretView = Static<typeof SigningSecretViewSchema>;

/** A new signing secret, the only time the secret is shown. */
export const CreatedSigningSecretSchema = Type.Object({
  kid: Type.String(),
  secret: Type.String(),
  created_at: Timestamp,
});
/** See {@link CreatedSigningSecretSchema}. */
export type CreatedSigningSecret = Static<typeof CreatedSigningSecretSchema>;

export async function createSigningSecret(ctx: AppContext, projectId: string): Promise<CreatedSigningSecret> {
  const secret = newSigningSecret();
  const [row] = await ctx.database.db
    .insert(signingSecrets)
    .values({ kid: newId("kid"), projectId, secretSealed: ctx.box.seal(secret), createdAt: ctx.clock.now() })
    .returning();
  if (!row) throw new AppError("internal", "signing secret was not created");
  return { kid: row.kid, secret, created_at: row.createdAt.toISOString() };
}

export async function listSigningSecrets(ctx: AppContext, projectId: string): Promise<SigningSecretView[]> {
  const rows = await ctx.database.db
    .select()
    .from(signingSecrets)
    .where(and(eq(signingSecrets.projectId, projectId), isNull(signingSecrets.deletedAt)))
    .orderBy(asc(signingSecrets.createdAt));
  return rows.map((r) => ({ kid: r.kid, created_at: r.createdAt.toISOString() }));
}

export async function findSigningSecret(ctx: AppContext, projectId: string, kid: string) {
  const [row] = await ctx.database.db
    .select()
    .from(signingSecrets)
    .where(
      and(
        eq(signingSecrets.projectId, projectId),
        eq(signingSecrets.kid, kid),
        isNull(signingSecrets.deletedAt),
      ),
    );
  if (!row) throw new AppError("signing_secrets.not_found", "signing secret not found");
  return row;
}

/** Plain secret for signing a delivery. */
export function openSigningSecret(ctx: AppContext, row: typeof signingSecrets.$inferSelect): string {
  return ctx.box.open(row.secretSealed);
}

/** Deletes a secret; refused while a route signs with it (rotate the route to a new kid first). */
export async function deleteSigningSecret(ctx: AppContext, projectId: string, kid: string): Promise<void> {
  const row = await findSigningSecret(ctx, projectId, kid);
  const [user] = await ctx.database.db
    .select({ id: routes.id })
    .from(routes)
    .where(and(eq(routes.signingSecretKid, row.kid), isNull(routes.deletedAt)))
    .limit(1);
  if (user)
    throw new AppError(
      "signing_secrets.in_use",
      `secret is used by route ${user.id}; move the route to another kid first`,
    );
  await ctx.database.db
    .update(signingSecrets)
    .set({ deletedAt: ctx.clock.now() })
    .where(eq(signingSecrets.kid, row.kid));
}
