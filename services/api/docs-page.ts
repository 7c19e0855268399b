/**
 * The rendered API reference at `/v1/docs` (docs/api.md, The reference): Swagger UI from the pinned
 * `swagger-ui-dist` package, served by the service itself so the page works with no internet access and
 * runs no script from a third-party origin.
 *
 * Invariants:
 * - Every script and stylesheet the page loads is same-origin (under `/v1/docs/assets/`), and the page's
 *   Content-Security-Policy allows scripts from `'self'` only; there is no inline script (the start-up
 *   call lives in `init.js`), so the policy needs no hash or `'unsafe-inline'` for scripts.
 * - Asset URLs carry the package version, so they are cached for a year as immutable and a new version
 *   is a new URL.
 * - The page and its assets need no credentials, like `/v1/openapi.json`.
 */
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Elysia } from "elysia";
import swaggerPkg from "swagger-ui-dist/package.json" with { type: "json" };
import type { AppContext } from "../context.ts";
import { AppError } from "../lib/errors.ts";

const require = createRequire(import.meta.url);
const DIST_DIR = dirname(require.resolve("swagger-ui-dist/package.json"));

/** Where the assets live, relative to `/v1/docs`; the version segment makes every URL immutable. */
export const DOCS_ASSETS_PATH = `docs/assets/${swaggerPkg.version}`;

/** The files the page loads, by the name they are served under. */
const ASSETS: Readonly<Record<string, { file: string | null; type: string }>> = {
  "swagger-ui.css": { file: "swagger-ui.css", type: "text/css; charset=utf-8" },
  "swagger-ui-bundle.js": { file: "swagger-ui-bundle.js", type: "text/javascript; charset=utf-8" },
  "init.js": { file: null, type: "text/javascript; charset=utf-8" },
};

const YEAR_S = 365 * 24 * 3600;

/**
 * Starts Swagger UI on the document. `openapi.json` is relative to the page (`/v1/docs`), so the
 * reference keeps working behind a proxy that mounts the service under a path. No validator badge
 * (it would fetch a public validator) and no top bar (it lets a visitor load any URL).
 */
const INIT_JS = `"use strict";
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: new URL("openapi.json", document.baseURI).href,
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
  });
});
`;

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * The page's policy. `connect-src` adds the origin of `PUBLIC_BASE_URL` (the document's server URL, which
 * "Try it out" calls) for a service reached under another name; styles allow `'unsafe-inline'` because
 * Swagger UI sets style attributes while rendering.
 */
export function docsContentSecurityPolicy(publicBaseUrl: string): string {
  const apiOrigin = new URL(publicBaseUrl).origin;
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    `connect-src 'self' ${apiOrigin}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

function pageHtml(title: string): string {
  const assets = DOCS_ASSETS_PATH;
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>${escapeHtml(title)}</title>
    <link rel="stylesheet" href="${assets}/swagger-ui.css" />
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="${assets}/swagger-ui-bundle.js"></script>
    <script src="${assets}/init.js"></script>
  </body>
</html>
`;
}

/**
 * `GET /docs` (the page) and `GET /docs/assets/{version}/{file}` (its scripts and stylesheet); mount
 * under `/v1`. An unknown file or another version is `request.not_found`.
 */
export function docsPageApi(ctx: AppContext, title: string) {
  const html = pageHtml(title);
  const csp = docsContentSecurityPolicy(ctx.config.publicBaseUrl);
  return new Elysia({ name: "mailhook-docs-page" })
    .get(
      "/docs",
      () =>
        new Response(html, {
          headers: {
            "content-type": "text/html; charset=utf-8",
            "content-security-policy": csp,
            "x-content-type-options": "nosniff",
            "cache-control": "no-cache",
          },
        }),
      { detail: { hide: true } },
    )
    .get(
      "/docs/assets/:version/:file",
      ({ params }) => {
        const asset = ASSETS[params.file];
        if (params.version !== swaggerPkg.version || !asset) {
          throw new AppError("request.not_found", "no such file of the API reference");
        }
        const body = asset.file === null ? INIT_JS : Bun.file(join(DIST_DIR, asset.file));
        return new Response(body, {
          headers: {
            "content-type": asset.type,
            "cache-control": `public, max-age=${YEAR_S}, immutable`,
            "x-content-type-options": "nosniff",
          },
        });
      },
      { detail: { hide: true } },
    );
}
