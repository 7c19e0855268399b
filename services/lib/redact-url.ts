/**
 * Masks the credentials a URL can carry, for URLs shown as a record of what was sent (attempt
 * captures, an event's routing snapshot; docs/delivery.md, Attempts) rather than as configuration.
 * Webhook receivers often authenticate by a token in the query string (`?token=…`, `?code=…`) or,
 * outside this service, in the userinfo; a capture copied into a ticket must not hand it on.
 *
 * What is masked, with the same `***` as secret headers:
 * - the userinfo: user and password each become `***` (RFC 3986 §3.2.1);
 * - every query parameter's value (`name=***`; an empty value stays empty, a bare `?word` is masked
 *   whole because it may itself be the token); parameter names and their order stay readable;
 * - a fragment (never sent, but part of the configured string).
 * Scheme, host, port and path are kept: a secret in the path is not recognisable as one, which is why
 * docs/api.md recommends a secret header for credentials.
 *
 * Invariants: a URL with none of these parts is returned unchanged, byte for byte; the result never
 * contains a masked value, and masking is idempotent. Anything but an http(s) URL is cut at its first
 * `?` or `#` and loses anything before an `@`.
 */

/** The placeholder shown instead of a secret. */
export const REDACTED = "***";

/** `url` with its userinfo, query values and fragment masked (see the module comment). */
export function redactUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return redactUnparsed(url);
  }
  // Other schemes have no common structure: `user:pw@host` even parses as scheme `user:`.
  if (u.protocol !== "http:" && u.protocol !== "https:") return redactUnparsed(url);
  if (u.username === "" && u.password === "" && u.search === "" && u.hash === "" && !/[?#@]/.test(url)) {
    return url;
  }
  const userinfo =
    u.username !== "" || u.password !== "" ? `${REDACTED}${u.password !== "" ? `:${REDACTED}` : ""}@` : "";
  const authority = u.host === "" ? "" : `//${userinfo}${u.host}`;
  return `${u.protocol}${authority}${u.pathname}${redactQuery(u.search)}${u.hash === "" ? "" : `#${REDACTED}`}`;
}

/** `?a=1&b&c=` → `?a=***&***&c=`; the `?` is kept only when the query had one. */
function redactQuery(search: string): string {
  if (search === "") return "";
  const parts = search
    .slice(1)
    .split("&")
    .map((part) => {
      if (part === "") return part;
      const eq = part.indexOf("=");
      if (eq < 0) return REDACTED;
      return eq === part.length - 1 ? part : `${part.slice(0, eq)}=${REDACTED}`;
    });
  return `?${parts.join("&")}`;
}

function redactUnparsed(text: string): string {
  const cut = text.search(/[?#]/);
  const head = cut < 0 ? text : text.slice(0, cut);
  const at = head.lastIndexOf("@");
  const masked = at < 0 ? head : `${REDACTED}@${head.slice(at + 1)}`;
  return cut < 0 ? masked : `${masked}${text[cut]}${REDACTED}`;
}
