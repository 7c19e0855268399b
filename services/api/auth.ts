/**
 * Authentication guards. They run in Elysia's transform phase (`derive`), before body validation, so a
 * request without credentials gets 401 whatever its body.
 */
import { Elysia } from "elysia";
import type { AppContext } from "../context.ts";
import { safeEqual } from "../lib/crypto.ts";
import { AppError } from "../lib/errors.ts";
import { authenticateApiKey } from "../resources/api-keys.ts";

/** Adds `auth: {projectId, keyId}` from `X-API-Key` to every route of the plugin that uses it. */
export function projectAuth(ctx: AppContext) {
  return new Elysia().derive({ as: "scoped" }, async ({ headers }) => ({
    auth: await authenticateApiKey(ctx, headers["x-api-key"]),
  }));
}

/** Operator endpoints: `X-Setup-Token`, compared in constant time. */
export function setupAuth(ctx: AppContext) {
  return new Elysia().derive({ as: "scoped" }, ({ headers }) => {
    const token = headers["x-setup-token"];
    if (!token) throw new AppError("auth.missing_setup_token", "the X-Setup-Token header is required");
    if (!safeEqual(token.trim(), ctx.setupToken))
      throw new AppError("auth.invalid_setup_token", "the setup token is wrong");
    return { operator: true as const };
  });
}
