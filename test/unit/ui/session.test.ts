import { describe, expect, test } from "bun:test";
import { createSecretBox } from "../../../services/lib/crypto.ts";
import { crossSite } from "../../../services/ui/guard.ts";
import {
  checkCsrf,
  clearedSessionCookie,
  csrfToken,
  newSession,
  openSession,
  readCookie,
  SESSION_TTL_MS,
  sealSession,
  sessionCookie,
} from "../../../services/ui/session.ts";

const box = createSecretBox(new Uint8Array(32).fill(3));
const now = new Date("2026-03-01T12:00:00Z");
const later = (ms: number) => new Date(now.getTime() + ms);

describe("session cookie", () => {
  test("round-trips through the box and never contains the API key", () => {
    const session = newSession("mh_secret_key_value", now);
    const sealed = sealSession(box, session);
    expect(sealed).not.toContain("mh_secret_key_value");
    expect(openSession(box, sealed, later(1000))).toEqual(session);
  });

  test("two sessions of the same key have different sids (and CSRF tokens)", () => {
    const a = newSession("k", now);
    const b = newSession("k", now);
    expect(a.sid).not.toBe(b.sid);
    expect(csrfToken(a)).not.toBe(csrfToken(b));
  });

  test.each([
    ["missing", null],
    ["empty", ""],
    ["garbage", "v1.abc.def"],
    ["too long", "x".repeat(5000)],
    ["sealed by another key", sealSession(createSecretBox(new Uint8Array(32).fill(4)), newSession("k", now))],
    [
      "sealed for another purpose",
      box.seal(JSON.stringify({ sid: "x".repeat(43), key: "k", iat: now.getTime() })),
    ],
    ["an endpoint secret sealed by the same box", box.seal("Bearer abc")],
  ])("refuses a cookie that is %s", (_name, value) => {
    expect(openSession(box, value, now)).toBeNull();
  });

  test("refuses a tampered cookie", () => {
    const sealed = sealSession(box, newSession("k", now));
    const flipped = `${sealed.slice(0, -3)}${sealed.at(-3) === "A" ? "B" : "A"}${sealed.slice(-2)}`;
    expect(openSession(box, flipped, now)).toBeNull();
  });

  test("expires after the session lifetime, and refuses sessions from the future", () => {
    const sealed = sealSession(box, newSession("k", now));
    expect(openSession(box, sealed, later(SESSION_TTL_MS))).not.toBeNull();
    expect(openSession(box, sealed, later(SESSION_TTL_MS + 1))).toBeNull();
    expect(openSession(box, sealed, later(-60_000))).toBeNull();
  });

  test("Set-Cookie carries HttpOnly, SameSite=Strict, Path=/ui and the remaining lifetime", () => {
    const session = newSession("k", now);
    const cookie = sessionCookie("v1.a.b", session, later(60 * 60 * 1000), { secure: false });
    expect(cookie).toBe(
      `mh_session=v1.a.b; Path=/ui; Max-Age=${SESSION_TTL_MS / 1000 - 3600}; HttpOnly; SameSite=Strict`,
    );
    expect(sessionCookie("v1.a.b", session, now, { secure: true })).toEndWith("; Secure");
  });

  test("the cleared cookie expires at once with the same scope", () => {
    expect(clearedSessionCookie({ secure: true })).toBe(
      "mh_session=; Path=/ui; Max-Age=0; HttpOnly; SameSite=Strict; Secure",
    );
  });

  test.each([
    [null, null],
    ["", null],
    ["mh_session=abc", "abc"],
    ["a=1; mh_session=v1.x.y; b=2", "v1.x.y"],
    ["mh_session=first; mh_session=second", "first"],
    ["xmh_session=no; other=1", null],
    ["  mh_session = spaced ", "spaced"],
  ])("readCookie(%p) → %p", (header, expected) => {
    expect(readCookie(header, "mh_session")).toBe(expected);
  });
});

describe("CSRF token", () => {
  const session = newSession("k", now);
  const token = csrfToken(session);

  test("is stable for a session and does not reveal its sid", () => {
    expect(csrfToken(session)).toBe(token);
    expect(token).not.toContain(session.sid);
  });

  test.each([
    ["the right token", token, true],
    ["no token", undefined, false],
    ["an empty token", "", false],
    ["another session's token", csrfToken(newSession("k", now)), false],
    ["the sid itself", session.sid, false],
    ["a truncated token", token.slice(0, -1), false],
    ["a non-string", 42, false],
  ])("checkCsrf with %s → %p", (_name, candidate, ok) => {
    expect(checkCsrf(session, candidate)).toBe(ok);
  });

  test("no session → never valid", () => {
    expect(checkCsrf(null, token)).toBe(false);
  });
});

describe("crossSite", () => {
  const req = (headers: Record<string, string>) =>
    new Request("http://dash.example:8080/ui/routes", { method: "POST", headers });

  test.each([
    ["no Origin or Sec-Fetch-Site", {}, false],
    ["same-origin fetch metadata", { "sec-fetch-site": "same-origin" }, false],
    ["user-initiated navigation", { "sec-fetch-site": "none" }, false],
    ["cross-site fetch metadata", { "sec-fetch-site": "cross-site" }, true],
    ["same-site (another subdomain)", { "sec-fetch-site": "same-site" }, true],
    ["Origin of this host", { origin: "http://dash.example:8080", host: "dash.example:8080" }, false],
    ["Origin of another host", { origin: "https://evil.example", host: "dash.example:8080" }, true],
    ["Origin on another port", { origin: "http://dash.example:9090", host: "dash.example:8080" }, true],
    ["opaque Origin", { origin: "null" }, true],
    ["malformed Origin", { origin: "::::" }, true],
  ])("%s → %p", (_name, headers, expected) => {
    expect(crossSite(req(headers))).toBe(expected);
  });
});
