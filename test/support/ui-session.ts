/**
 * The dashboard as a browser without JavaScript sees it, for tests: requests through the in-process
 * app, the CSRF token of a page, and a signed-in session.
 */
import type { TestApp } from "./app.ts";

/** The content type of the dashboard's forms. */
export const FORM = { "content-type": "application/x-www-form-urlencoded" };

/** One request to the app; the response with its text read. */
export async function uiCall(app: TestApp, method: string, path: string, init: RequestInit = {}) {
  const res = await app.api.handle(new Request(`http://localhost${path}`, { method, ...init }));
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** The CSRF token of a page: its forms' hidden `_csrf` field, or the page's `data-csrf`. */
export function csrfOf(page: string): string {
  const m = page.match(/name="_csrf" value="([^"]+)"/) ?? page.match(/data-csrf="([^"]+)"/);
  if (!m?.[1]) throw new Error(`no CSRF token in page: ${page.slice(0, 500)}`);
  return m[1];
}

/** The `name=value` part of a Set-Cookie header. */
export function cookieOf(setCookie: string | null): string {
  if (!setCookie) throw new Error("no Set-Cookie");
  return setCookie.split(";")[0] as string;
}

/**
 * Signs in like a browser (GET the form for its anonymous cookie and token, POST the API key), then
 * opens `landing` for the session's CSRF token.
 */
export async function signIn(
  app: TestApp,
  apiKey: string,
  landing = "/ui/events",
): Promise<{ cookie: string; csrf: string; setCookie: string }> {
  const form = await uiCall(app, "GET", "/ui/sign-in");
  const anon = cookieOf(form.headers.get("set-cookie"));
  const res = await uiCall(app, "POST", "/ui/sign-in", {
    headers: { ...FORM, cookie: anon },
    body: new URLSearchParams({ _csrf: csrfOf(form.text), api_key: apiKey }),
  });
  if (res.status !== 303) throw new Error(`sign-in: ${res.status} ${res.text.slice(0, 400)}`);
  const setCookie = res.headers.get("set-cookie") ?? "";
  const cookie = cookieOf(setCookie);
  const page = await uiCall(app, "GET", landing, { headers: { cookie } });
  return { cookie, csrf: csrfOf(page.text), setCookie };
}
