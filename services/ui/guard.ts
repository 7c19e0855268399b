/**
 * Request guards of the dashboard: who is signed in (session cookie → API key → project) and whether a
 * state-changing request is genuine (same origin + CSRF token). Handlers are wrapped by
 * {@link uiHandler}, which also turns failures into HTML pages instead of the API's JSON errors.
 */
import type { AppContext } from "../context.ts";
import { AppError } from "../lib/errors.ts";
import { authenticateApiKey } from "../resources/api-keys.ts";
import { getProject, type ProjectView } from "../resources/projects.ts";
import { errorPage } from "./layout.ts";
import { jsonResponse, redirect } from "./respond.ts";
import { isRevoked } from "./revocation.ts";
import {
  type CookieOptions,
  checkCsrf,
  clearedSessionCookie,
  csrfToken,
  openSession,
  readCookie,
  SESSION_COOKIE,
  type UiSession,
} from "./session.ts";

/** What Elysia hands a dashboard handler (the parts the dashboard uses). */
export interface UiInput {
  request: Request;
  params: Record<string, string>;
  query: Record<string, string | undefined>;
  body: unknown;
}

/** A signed-in request. */
export interface UiRequest extends UiInput {
  ctx: AppContext;
  session: UiSession;
  projectId: string;
  project: ProjectView;
  /** this session's CSRF token, for forms and the page's fetches */
  csrf: string;
}

/** Cookie attributes for this deployment: `Secure` when `PUBLIC_BASE_URL` is https. */
export function cookieOptions(ctx: AppContext): CookieOptions {
  return { secure: ctx.config.publicBaseUrl.startsWith("https:") };
}

/** The session of a request, or null. */
export function sessionOf(ctx: AppContext, request: Request): UiSession | null {
  return openSession(ctx.box, readCookie(request.headers.get("cookie"), SESSION_COOKIE), ctx.clock.now());
}

/** One string field of a parsed form or JSON body ("" when absent or not a string). */
export function field(body: unknown, name: string): string {
  if (typeof body !== "object" || body === null) return "";
  const value = (body as Record<string, unknown>)[name];
  return typeof value === "string" ? value : "";
}

/**
 * True when a state-changing request may come from another site: `Sec-Fetch-Site` says cross-site, or
 * an `Origin` header names another host. (Absent headers are not proof of anything; the CSRF token is
 * the real check — this only refuses early.)
 */
export function crossSite(request: Request): boolean {
  const site = request.headers.get("sec-fetch-site");
  if (site && site !== "same-origin" && site !== "none") return true;
  const origin = request.headers.get("origin");
  if (!origin) return false;
  if (origin === "null") return true;
  try {
    return new URL(origin).host !== (request.headers.get("host") ?? new URL(request.url).host);
  } catch {
    return true;
  }
}

/** True when the request carries the session's CSRF token (form field `_csrf` or `X-CSRF-Token`). */
export function genuine(request: Request, session: UiSession | null, body: unknown): boolean {
  if (crossSite(request)) return false;
  return checkCsrf(session, request.headers.get("x-csrf-token") ?? field(body, "_csrf"));
}

function forbidden(json: boolean): Response {
  if (json) return jsonResponse({ error: { code: "ui.csrf", message: "missing or wrong CSRF token" } }, 403);
  return errorPage(
    403,
    "This form has expired",
    "The request did not carry this dashboard's security token (it may come from another site, or the page was open for too long). Go back, reload the page and try again.",
  );
}

/** Turns a failure in a handler into a page (or JSON for the page's fetches). */
function failure(ctx: AppContext, err: unknown, json: boolean): Response {
  if (err instanceof AppError && err.status < 500) {
    if (json) return jsonResponse({ error: { code: err.code, message: err.message } }, err.status);
    const title = err.status === 404 ? "Not found" : "Request refused";
    return errorPage(err.status, title, err.message);
  }
  ctx.logger.error("dashboard error", { err });
  if (json) return jsonResponse({ error: { code: "internal", message: "internal error" } }, 500);
  return errorPage(500, "Something went wrong", "The service logged the details.");
}

/**
 * Wraps a signed-in handler: no valid session (or a disabled key) → 303 to the sign-in page (401 JSON
 * for `json` handlers); a POST must be genuine (see {@link genuine}) or gets 403.
 */
export function uiHandler(
  ctx: AppContext,
  handler: (req: UiRequest) => Promise<Response> | Response,
  opts: { json?: boolean } = {},
) {
  const json = opts.json === true;
  return async (input: UiInput): Promise<Response> => {
    const session = sessionOf(ctx, input.request);
    let projectId: string;
    try {
      if (!session?.apiKey) throw new AppError("auth.missing_api_key", "not signed in");
      ({ projectId } = await authenticateApiKey(ctx, session.apiKey));
      if (await isRevoked(ctx, session)) throw new AppError("auth.invalid_api_key", "signed out");
    } catch (err) {
      if (!(err instanceof AppError) || err.status !== 401) return failure(ctx, err, json);
      if (json) return jsonResponse({ error: { code: err.code, message: "sign in again" } }, 401);
      const notice = session?.apiKey ? "?notice=signed-out" : "";
      return redirect(
        `/ui/sign-in${notice}`,
        session?.apiKey ? clearedSessionCookie(cookieOptions(ctx)) : undefined,
      );
    }
    if (input.request.method !== "GET" && !genuine(input.request, session, input.body))
      return forbidden(json);
    try {
      const project = await getProject(ctx, projectId);
      return await handler({ ...input, ctx, session, projectId, project, csrf: csrfToken(session) });
    } catch (err) {
      return failure(ctx, err, json);
    }
  };
}
