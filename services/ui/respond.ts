/**
 * Responses of the dashboard: HTML with strict security headers, 303 redirects (POST → redirect → GET),
 * and small JSON bodies for the page's own fetches.
 */
import type { SafeHtml } from "./html.ts";

/**
 * Scripts and styles only from the dashboard itself (no inline script can run, so an escaping slip
 * cannot become script execution); forms only post back here; no framing.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

/** Headers on every dashboard response. */
export function securityHeaders(): Record<string, string> {
  return {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
  };
}

/** An HTML page. */
export function htmlResponse(body: SafeHtml, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(`<!doctype html>\n${body.value}`, {
    status,
    headers: { "content-type": "text/html; charset=utf-8", ...securityHeaders(), ...headers },
  });
}

/** 303 See Other to `location` (a path under /ui), optionally setting a cookie. */
export function redirect(location: string, setCookie?: string): Response {
  const headers = new Headers({ location, ...securityHeaders() });
  if (setCookie) headers.append("set-cookie", setCookie);
  return new Response(null, { status: 303, headers });
}

/** A JSON body for the dashboard's scripts. */
export function jsonResponse(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...securityHeaders() },
  });
}
