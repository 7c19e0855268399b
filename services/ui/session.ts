/**
 * Dashboard sessions and CSRF tokens.
 *
 * The session lives entirely in one cookie: `{sid, key, iat}` sealed with the service's secret box
 * (AES-256-GCM), so the browser never holds the raw API key and cannot forge or alter a session. The
 * key is re-authenticated on every request, so disabling it ends every session that uses it.
 * The cookie is `HttpOnly; SameSite=Strict; Path=/ui` (and `Secure` behind https).
 *
 * CSRF: a synchronizer token, HMAC-SHA256 keyed by the session's random `sid`, embedded in every form
 * and sent as `X-CSRF-Token` by the page's fetches. An attacker cannot read the cookie (sealed and
 * httpOnly) nor the page (same-origin policy), so cannot compute the token. Anonymous visitors get a
 * session without a key, so the sign-in form is protected too (login CSRF); signing in rotates `sid`.
 */
import { createHmac } from "node:crypto";
import type { SecretBox } from "../lib/crypto.ts";
import { safeEqual } from "../lib/crypto.ts";
import { randomToken } from "../lib/ids.ts";

/** Name of the session cookie. */
export const SESSION_COOKIE = "mh_session";
/** A session (signed in or not) ends this long after it was issued. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
/** Domain separation: a sealed value made for another purpose never opens as a session. */
const PURPOSE = "mailhook.ui.session.v1";

/** One browser's session. `apiKey` is null until the visitor signs in. */
export interface UiSession {
  /** 32 random bytes, base64url: the CSRF key of this session */
  sid: string;
  apiKey: string | null;
  /** ms since the epoch */
  issuedAt: number;
}

/** A fresh session with a new random `sid`. */
export function newSession(apiKey: string | null, now: Date): UiSession {
  return { sid: randomToken(32), apiKey, issuedAt: now.getTime() };
}

/** The cookie value for `session`: sealed, so it reveals and accepts nothing without the box key. */
export function sealSession(box: SecretBox, session: UiSession): string {
  return box.seal(
    JSON.stringify({ p: PURPOSE, sid: session.sid, key: session.apiKey, iat: session.issuedAt }),
  );
}

/** Opens a cookie value; null when it is missing, tampered with, of another purpose or expired. */
export function openSession(box: SecretBox, value: string | null | undefined, now: Date): UiSession | null {
  if (!value || value.length > 4096) return null;
  let payload: unknown;
  try {
    payload = JSON.parse(box.open(value));
  } catch {
    return null;
  }
  if (typeof payload !== "object" || payload === null) return null;
  const { p, sid, key, iat } = payload as Record<string, unknown>;
  if (p !== PURPOSE || typeof sid !== "string" || sid.length < 32 || typeof iat !== "number") return null;
  if (key !== null && typeof key !== "string") return null;
  const age = now.getTime() - iat;
  if (age < 0 || age > SESSION_TTL_MS) return null;
  return { sid, apiKey: key, issuedAt: iat };
}

/** The CSRF token of a session (stable for the session's life). */
export function csrfToken(session: UiSession): string {
  return createHmac("sha256", session.sid).update("mailhook.ui.csrf.v1").digest("base64url");
}

/** True when `token` is this session's CSRF token (constant-time comparison). */
export function checkCsrf(session: UiSession | null, token: unknown): boolean {
  if (!session || typeof token !== "string" || token.length === 0) return false;
  return safeEqual(token, csrfToken(session));
}

/** Cookie attributes; `secure` when the dashboard is served over https (RFC 6265 §4.1). */
export interface CookieOptions {
  secure: boolean;
}

/** The `Set-Cookie` value that stores `sealed` for the session's remaining life. */
export function sessionCookie(sealed: string, session: UiSession, now: Date, opts: CookieOptions): string {
  const maxAge = Math.max(0, Math.floor((session.issuedAt + SESSION_TTL_MS - now.getTime()) / 1000));
  return `${SESSION_COOKIE}=${sealed}; Path=/ui; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${opts.secure ? "; Secure" : ""}`;
}

/** The `Set-Cookie` value that deletes the session cookie. */
export function clearedSessionCookie(opts: CookieOptions): string {
  return `${SESSION_COOKIE}=; Path=/ui; Max-Age=0; HttpOnly; SameSite=Strict${opts.secure ? "; Secure" : ""}`;
}

/** Reads one cookie from a `Cookie` header (RFC 6265 §5.4); the first occurrence wins. */
export function readCookie(header: string | null | undefined, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}
