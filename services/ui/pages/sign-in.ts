/**
 * Sign in with a project API key, sign out. The key is checked with `authenticateApiKey` and then kept
 * only inside the sealed session cookie (see `../session.ts`).
 */
import { Elysia } from "elysia";
import type { AppContext } from "../../context.ts";
import { AppError } from "../../lib/errors.ts";
import { authenticateApiKey } from "../../resources/api-keys.ts";
import { cookieOptions, field, genuine, sessionOf, type UiInput } from "../guard.ts";
import { html } from "../html.ts";
import { barePage, csrfField, errorPage, noticeText } from "../layout.ts";
import { htmlResponse, redirect } from "../respond.ts";
import { isRevoked, revokeSession } from "../revocation.ts";
import {
  clearedSessionCookie,
  csrfToken,
  newSession,
  sealSession,
  sessionCookie,
  type UiSession,
} from "../session.ts";

function signInPage(csrf: string, opts: { error?: string; notice?: string | null } = {}) {
  return barePage(
    "Sign in",
    html`<div class="brand big"><span class="logo" aria-hidden="true">✉</span> mailhook</div>
<h1>Sign in</h1>
<p class="muted">Use one of your project's API keys (<code>mh_…</code>). It is kept in an encrypted, HTTP-only cookie for this dashboard only.</p>
${opts.notice ? html`<div class="notice" role="status">${opts.notice}</div>` : ""}
<form method="post" action="/ui/sign-in" class="form">
  ${csrfField(csrf)}
  <label for="api_key">API key</label>
  <input id="api_key" name="api_key" type="password" autocomplete="current-password" required autofocus spellcheck="false">
  ${opts.error ? html`<ul class="field-errors" role="alert"><li>${opts.error}</li></ul>` : ""}
  <button type="submit" class="btn primary">Sign in</button>
</form>`,
  );
}

/** GET/POST `/ui/sign-in`, POST `/ui/sign-out`. */
export function signInPages(ctx: AppContext) {
  const opts = cookieOptions(ctx);
  /** The visitor's session, or a new anonymous one (returned with the cookie that stores it). */
  const anonymous = (request: Request): { session: UiSession; cookie?: string } => {
    const existing = sessionOf(ctx, request);
    if (existing) return { session: existing };
    const now = ctx.clock.now();
    const session = newSession(null, now);
    return { session, cookie: sessionCookie(sealSession(ctx.box, session), session, now, opts) };
  };

  return new Elysia()
    .get("/sign-in", async ({ request, query }: UiInput) => {
      const { session, cookie } = anonymous(request);
      if (session.apiKey) {
        const ok = await authenticateApiKey(ctx, session.apiKey).then(
          async () => !(await isRevoked(ctx, session)),
          () => false,
        );
        if (ok) return redirect("/ui/events");
      }
      return htmlResponse(
        signInPage(csrfToken(session), { notice: noticeText(query.notice) }),
        200,
        cookie ? { "set-cookie": cookie } : {},
      );
    })
    .post("/sign-in", async ({ request, body }: UiInput) => {
      const current = sessionOf(ctx, request);
      if (!genuine(request, current, body)) {
        return errorPage(
          403,
          "This form has expired",
          "Reload the sign-in page and try again (cookies must be enabled for this site).",
        );
      }
      const key = field(body, "api_key").trim();
      try {
        await authenticateApiKey(ctx, key);
      } catch (err) {
        if (!(err instanceof AppError) || err.status !== 401) throw err;
        const message = key ? "That API key is wrong or disabled." : "Enter an API key.";
        return htmlResponse(signInPage(csrfToken(current as UiSession), { error: message }), 401);
      }
      // A new sid on sign-in: a token or cookie planted before sign-in is worthless after it.
      const now = ctx.clock.now();
      const session = newSession(key, now);
      return redirect("/ui/events", sessionCookie(sealSession(ctx.box, session), session, now, opts));
    })
    .post("/sign-out", async ({ request, body }: UiInput) => {
      const session = sessionOf(ctx, request);
      if (!genuine(request, session, body)) {
        return errorPage(403, "This form has expired", "Reload the page and try again.");
      }
      // The cookie is cleared, and the session recorded as ended: a copy of the cookie is worthless too.
      if (session?.apiKey) await revokeSession(ctx, session);
      return redirect("/ui/sign-in?notice=signed-out", clearedSessionCookie(opts));
    });
}
