/**
 * Authentication guards, checked before anything else looks at a request's body.
 *
 * Elysia parses a body before `derive` and validates it after, so each guard is two hooks on the
 * routes of the plugin that uses it: a parse hook that checks the credential and only then reads the
 * JSON body within its limit (body-limit.ts), and a `derive` that adds the result to the context (the
 * only hook that runs where there is no body to parse: GET, HEAD). A request without valid credentials
 * is a 401 whatever its body, and that body is never read. The API key is looked up once per request:
 * both hooks share one promise per `Request`.
 *
 * A route that reads its own body (the raw upload) takes {@link projectAuth} with `{ rawBody: true }`
 * and a `parse: "none"` option: no parse hook, so Elysia leaves the stream to its handler, which runs
 * after the `derive` has checked the key.
 */
import { Elysia } from "elysia";
import type { AppContext } from "../context.ts";
import { safeEqual } from "../lib/crypto.ts";
import { AppError } from "../lib/errors.ts";
import { authenticateApiKey } from "../resources/api-keys.ts";
import { readJsonBody } from "./body-limit.ts";

type ProjectAuth = Awaited<ReturnType<typeof authenticateApiKey>>;

/** One key lookup per request, shared by the parse hook and the `derive` (weakly held). */
const apiKeyChecks = new WeakMap<Request, Promise<ProjectAuth>>();

function apiKeyOf(ctx: AppContext, request: Request): Promise<ProjectAuth> {
  let check = apiKeyChecks.get(request);
  if (!check) {
    check = authenticateApiKey(ctx, request.headers.get("x-api-key"));
    apiKeyChecks.set(request, check);
  }
  return check;
}

type BodyHook = (c: { request: Request }) => Promise<unknown>;

/**
 * A guard's parse hooks: `hook`, then Elysia's named `json` parser. The named parser never runs (the
 * hook returns a value, `null` for no body, or throws, and Elysia tries the next parser only after an
 * `undefined`); it is there because @elysiajs/openapi lists a route's request media types from its
 * named parsers, and `application/json` is the only one these routes take.
 */
function jsonParser(hook: BodyHook): BodyHook[] {
  return [hook, "json" as unknown as BodyHook];
}

/** Options of {@link projectAuth}. */
export interface ProjectAuthOptions {
  /** the route reads its body itself (and declares `parse: "none"`); no JSON body is parsed for it */
  rawBody?: boolean;
}

/**
 * Adds `auth: {projectId, keyId}` from `X-API-Key` to every route of the plugin that uses it, and reads
 * those routes' JSON bodies once the key is known to be good.
 */
export function projectAuth(ctx: AppContext, opts: ProjectAuthOptions = {}) {
  const plugin = new Elysia();
  if (!opts.rawBody) {
    plugin.onParse(
      { as: "scoped" },
      jsonParser(async function authenticatedJsonBody({ request }) {
        await apiKeyOf(ctx, request);
        return readJsonBody(request, ctx.config.apiMaxJsonBytes);
      }),
    );
  }
  return plugin.derive({ as: "scoped" }, async ({ request }) => ({ auth: await apiKeyOf(ctx, request) }));
}

function checkSetupToken(ctx: AppContext, token: string | null | undefined): void {
  if (!token) throw new AppError("auth.missing_setup_token", "the X-Setup-Token header is required");
  if (!safeEqual(token.trim(), ctx.setupToken))
    throw new AppError("auth.invalid_setup_token", "the setup token is wrong");
}

/** Operator endpoints: `X-Setup-Token`, compared in constant time, before the JSON body is read. */
export function setupAuth(ctx: AppContext) {
  return new Elysia()
    .onParse(
      { as: "scoped" },
      jsonParser(async function operatorJsonBody({ request }) {
        checkSetupToken(ctx, request.headers.get("x-setup-token"));
        return readJsonBody(request, ctx.config.apiMaxJsonBytes);
      }),
    )
    .derive({ as: "scoped" }, ({ request }) => {
      checkSetupToken(ctx, request.headers.get("x-setup-token"));
      return { operator: true as const };
    });
}
