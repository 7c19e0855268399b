/**
 * The dashboard's request bodies, read by the dashboard itself instead of Elysia's default parsers:
 * - Sign-in first. A POST from a browser that is not signed in has its body left unread (the page
 *   handler then sends it to the sign-in page, guard.ts); only the sign-in and sign-out forms are read
 *   without a session, and they are tiny.
 * - Size. A form is at most {@link FORM_MAX_BYTES} (a route's pipeline JSON, URL-encoded), the
 *   playground's preview at most {@link PREVIEW_MAX_BYTES} (a pasted message up to 5 MiB); a larger
 *   body is 413 `request.too_large`, refused unread when its length is declared and cut off when not.
 */

import type { AppContext } from "../context.ts";
import { AppError } from "../lib/errors.ts";
import { readStreamAtMost } from "../lib/read-at-most.ts";
import { sessionOf } from "./guard.ts";

/** Sign-in and sign-out forms: an API key and a CSRF token. */
export const SIGN_IN_MAX_BYTES = 16 * 1024;
/** Any other form: a route editor with a large mapper config, URL-encoded. */
export const FORM_MAX_BYTES = 4 * 1024 * 1024;
/** The playground's preview: a config and a pasted raw message (5 MiB), as JSON. */
export const PREVIEW_MAX_BYTES = 12 * 1024 * 1024;

function tooLarge(limit: number): AppError {
  return new AppError("request.too_large", `the request body is over the ${limit}-byte limit of this page`);
}

/** The limit for a POST to `path`, and whether it may be read without a signed-in session. */
function limitOf(path: string): { limit: number; anonymous: boolean } {
  if (path === "/ui/sign-in" || path === "/ui/sign-out") return { limit: SIGN_IN_MAX_BYTES, anonymous: true };
  if (path === "/ui/api/mapper/preview") return { limit: PREVIEW_MAX_BYTES, anonymous: false };
  return { limit: FORM_MAX_BYTES, anonymous: false };
}

/**
 * The dashboard's parse hook: the body of a form (`application/x-www-form-urlencoded`) or of a page
 * script's JSON fetch, as an object; `{}` for a request that is not signed in (unread).
 */
export function dashboardBodyParser(ctx: AppContext) {
  return async ({ request }: { request: Request }): Promise<unknown> => {
    const { limit, anonymous } = limitOf(new URL(request.url).pathname);
    if (!anonymous && !sessionOf(ctx, request)?.apiKey) return {};
    const declared = request.headers.get("content-length");
    if (declared !== null && Number(declared) > limit) throw tooLarge(limit);
    if (!request.body) return {};
    const text = new TextDecoder().decode(await readStreamAtMost(request.body, limit, () => tooLarge(limit)));
    const type = (request.headers.get("content-type") ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
    if (type === "application/json") {
      try {
        return text ? JSON.parse(text) : {};
      } catch {
        throw new AppError("request.invalid", "the request body is not valid JSON", [
          { path: "", message: "the body is not valid JSON" },
        ]);
      }
    }
    return formFields(new URLSearchParams(text));
  };
}

/** A form's fields; a name given more than once (a list of checkboxes) becomes an array, as Elysia's parser makes it. */
function formFields(params: URLSearchParams): Record<string, string | string[]> {
  // no prototype: a field named `__proto__` is just a field
  const out: Record<string, string | string[]> = Object.create(null);
  for (const [name, value] of params) {
    const seen = out[name];
    if (seen === undefined) out[name] = value;
    else if (Array.isArray(seen)) seen.push(value);
    else out[name] = [seen, value];
  }
  return out;
}
