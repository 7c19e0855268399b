/**
 * API keys (spec: Authentication). The secret is shown once; only its SHA-256 is stored. Rotation: create a
 * replacement, move backends, disable the old key (DELETE). The last active key cannot be disabled, so a
 * project can never lock itself out.
 */
import { type Static, Type } from "@sinclair/typebox";
import { and, asc, eq, isNull, sql } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import type { Db } from "../db/client.ts";
import { apiKeys } from "../db/schema/index.ts";
import { safeEqual } from "../lib/crypto.ts";
import { AppError } from "../lib/errors.ts";
import { newId, randomToken, sha256Hex } from "../lib/ids.ts";
import { Nullable, Timestamp } from "../lib/schema.ts";

const KEY_PREFIX = "mh_";
/** `last_used_at` is written at most this often per key, so authentication is not a write per request. */
const LAST_USED_RESOLUTION_MS = 60_000;

/** An API key as listed: never the secret, only its first characters (`prefix`). */
export const ApiKeyViewSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  prefix: Type.String(),
  created_at: Timestamp,
  last_used_at: Nullable(Timestamp),
  disabled_at: Nullable(Timestamp),
});
/** See {@link ApiKeyViewSchema}. */
export type ApiKeyView = Static<typeof ApiKeyViewSchema>;

/** A new API key, the only time its secret is shown. */
export const CreatedApiKeySchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  secret: Type.String(),
  created_at: Timestamp,
});
/** See {@link CreatedApiKeySchema}. */
export type CreatedApiKey = Static<typeof CreatedApiKeySchema>;

type Tx = Pick<Db, "insert">;

export async function createApiKey(
  ctx: AppContext,
  projectId: string,
  name: string,
  tx: Tx = ctx.database.db,
) {
  const secret = `${KEY_PREFIX}${randomToken(32)}`;
  const [row] = await tx
    .insert(apiKeys)
    .values({
      id: newId("key"),
      projectId,
      name,
      prefix: secret.slice(0, 10),
      secretHash: sha256Hex(secret),
      createdAt: ctx.clock.now(),
    })
    .returning();
  if (!row) throw new AppError("internal", "api key was not created");
  return {
    id: row.id,
    name: row.name,
    secret,
    created_at: row.createdAt.toISOString(),
  } satisfies CreatedApiKey;
}

function view(row: typeof apiKeys.$inferSelect): ApiKeyView {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    created_at: row.createdAt.toISOString(),
    last_used_at: row.lastUsedAt?.toISOString() ?? null,
    disabled_at: row.disabledAt?.toISOString() ?? null,
  };
}

export async function listApiKeys(ctx: AppContext, projectId: string): Promise<ApiKeyView[]> {
  const rows = await ctx.database.db
    .select()
    .from(apiKeys)
    .where(eq(apiKeys.projectId, projectId))
    .orderBy(asc(apiKeys.createdAt));
  return rows.map(view);
}

export async function disableApiKey(ctx: AppContext, projectId: string, id: string): Promise<ApiKeyView> {
  return ctx.database.db.transaction(async (tx) => {
    const active = await tx
      .select()
      .from(apiKeys)
      .where(and(eq(apiKeys.projectId, projectId), isNull(apiKeys.disabledAt)))
      .for("update");
    const target = active.find((k) => k.id === id);
    if (!target) {
      const [disabled] = await tx
        .select()
        .from(apiKeys)
        .where(and(eq(apiKeys.projectId, projectId), eq(apiKeys.id, id)));
      if (disabled) return view(disabled); // already disabled: idempotent
      throw new AppError("api_keys.not_found", "API key not found");
    }
    if (active.length === 1) {
      throw new AppError(
        "api_keys.last_active_key",
        "this is the project's last active API key; create a replacement before disabling it",
      );
    }
    const [row] = await tx
      .update(apiKeys)
      .set({ disabledAt: ctx.clock.now() })
      .where(eq(apiKeys.id, id))
      .returning();
    return view(row ?? target);
  });
}

/**
 * Resolves `X-API-Key` to its project. Missing → `auth.missing_api_key`; unknown or disabled →
 * `auth.invalid_api_key` (the same answer for both, so a disabled key reveals nothing).
 */
export async function authenticateApiKey(
  ctx: AppContext,
  secret: string | undefined | null,
): Promise<{ projectId: string; keyId: string }> {
  if (!secret) throw new AppError("auth.missing_api_key", "the X-API-Key header is required");
  const hash = sha256Hex(secret.trim());
  // Every authenticated request runs this: raw SQL, no query builder (on Postgres it is prepared, like
  // every parameterised statement: db/postgres.ts `preparing`).
  const [row] = await ctx.database.rows<{
    id: string;
    project_id: string;
    secret_hash: string;
    disabled: boolean;
    last_used_at: Date | string | null;
  }>(
    sql`select id, project_id, secret_hash, disabled_at is not null as disabled, last_used_at
        from api_keys where secret_hash = ${hash}`,
  );
  // The lookup is by hash (an index probe independent of how much of the secret matched); the comparison
  // below is constant-time anyway.
  if (!row || row.disabled || !safeEqual(row.secret_hash, hash)) {
    throw new AppError("auth.invalid_api_key", "the API key is wrong or disabled");
  }
  const now = ctx.clock.now();
  const lastUsed = row.last_used_at === null ? null : new Date(row.last_used_at);
  if (!lastUsed || now.getTime() - lastUsed.getTime() > LAST_USED_RESOLUTION_MS) {
    await ctx.database.db.update(apiKeys).set({ lastUsedAt: now }).where(eq(apiKeys.id, row.id));
  }
  return { projectId: row.project_id, keyId: row.id };
}
