/**
 * The API reference page is self-contained: its HTML names no other origin for scripts or styles,
 * its assets are served by the service with the right type and a long cache, and the page's
 * Content-Security-Policy allows same-origin scripts only. The page reads no database, so one kind is
 * enough; test/e2e/docs.test.ts renders it in Chromium with the internet blocked.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { DOCS_ASSETS_PATH } from "../../services/api/docs-page.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";

const kind = testDbKinds().includes("postgres") ? "postgres" : "pglite";

/** The `src`/`href` of every script, stylesheet and preload in an HTML page. */
function assetUrls(html: string): string[] {
  const tags = html.match(/<(script|link)\b[^>]*>/gi) ?? [];
  return tags.flatMap((tag) =>
    [...tag.matchAll(/\b(?:src|href)\s*=\s*["']?([^"'\s>]+)/gi)].map((m) => m[1] ?? ""),
  );
}

describe(`API reference page (${kind})`, () => {
  let app: TestApp;

  beforeAll(async () => {
    app = await createTestApp(kind);
  }, 30_000);
  afterAll(async () => {
    await app?.close();
  });

  test("the page loads only relative, same-origin assets, under a script-src 'self' policy", async () => {
    const r = await app.request("GET", "/v1/docs");
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const urls = assetUrls(r.text);
    expect(urls.length, r.text).toBeGreaterThanOrEqual(3);
    for (const u of urls) {
      expect(u, r.text).not.toMatch(/^(https?:)?\/\//i);
      expect(u).toStartWith(`${DOCS_ASSETS_PATH}/`);
    }
    expect(r.text).not.toMatch(/https?:\/\//);
    expect(r.text, "no inline script").not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/i);
    const csp = r.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toMatch(/script-src[^;]*(unsafe|https?:|\*)/);
  });

  test("every asset the page names is served with its type and an immutable year-long cache", async () => {
    const page = await app.request("GET", "/v1/docs");
    const types: Record<string, string> = { css: "text/css", js: "text/javascript" };
    for (const u of assetUrls(page.text)) {
      const r = await app.request("GET", `/v1/${u}`);
      expect(r.status, u).toBe(200);
      expect(r.headers.get("content-type")).toStartWith(types[u.split(".").pop() ?? ""] ?? "?");
      expect(r.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect(r.text.length).toBeGreaterThan(100);
    }
  });

  test("an unknown asset or another version is a JSON 404", async () => {
    for (const path of [
      `/v1/${DOCS_ASSETS_PATH}/package.json`,
      `/v1/${DOCS_ASSETS_PATH}/..%2Fpackage.json`,
      "/v1/docs/assets/0.0.1/swagger-ui.css",
    ]) {
      const r = await app.request("GET", path);
      expect(r.status, `${path}: ${r.text}`).toBe(404);
      expect(r.body.error.code).toBe("request.not_found");
    }
  });
});
