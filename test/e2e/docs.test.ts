/**
 * The API reference at `/v1/docs` in a real browser with every non-loopback request blocked: it must
 * render the operations from assets the service serves itself, load nothing from another origin, and
 * trip no Content-Security-Policy violation.
 *
 * Needs `/usr/bin/chromium` (`.ci/run` installs it); `MAILHOOK_SKIP_BROWSER=1` skips the file.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { BrowserContext } from "playwright-core";
import { createTestApp, type TestApp } from "../support/app.ts";
import { launchChromium, SCREENSHOTS, SKIP_BROWSER } from "../support/browser.ts";
import { testDbKinds } from "../support/db.ts";

describe.skipIf(SKIP_BROWSER)("API reference in Chromium without internet", () => {
  let app: TestApp;
  let server: ReturnType<typeof Bun.serve>;
  let browser: BrowserContext;
  let base: string;

  beforeAll(async () => {
    app = await createTestApp(testDbKinds().includes("postgres") ? "postgres" : "pglite");
    server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => app.api.handle(req) });
    base = `http://127.0.0.1:${server.port}`;
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop(true);
    await app?.close();
  });

  test("renders every operation from same-origin assets, with no CSP violation", async () => {
    const requested: string[] = [];
    const blocked: string[] = [];
    const problems: string[] = [];
    // The network this page may use: loopback only. Anything else is aborted and recorded.
    await browser.route("**/*", (route) => {
      const url = new URL(route.request().url());
      requested.push(url.href);
      if (url.hostname === "127.0.0.1" || url.hostname === "localhost" || url.hostname === "[::1]") {
        return route.continue();
      }
      blocked.push(url.href);
      return route.abort("internetdisconnected");
    });
    const page = browser.pages()[0] ?? (await browser.newPage());
    page.setDefaultTimeout(20_000);
    page.on("console", (m) => {
      if (m.type() === "error") problems.push(m.text());
    });
    page.on("pageerror", (e) => problems.push(e.message));

    const res = await page.goto(`${base}/v1/docs`);
    expect(res?.status()).toBe(200);
    expect(res?.headers()["content-security-policy"]).toContain("script-src 'self'");
    // Swagger UI draws one block per operation once it has fetched and parsed /v1/openapi.json.
    await page.locator(".opblock").first().waitFor();
    await expect(page.locator(".info .title").textContent()).resolves.toContain("mailhook API");
    expect(await page.locator(".opblock").count()).toBeGreaterThan(20);
    // Opening an operation renders its parameters and schemas (more of the bundle's code paths).
    await page.locator(".opblock .opblock-summary").first().click();
    await page.locator(".opblock-body").first().waitFor();
    await page.screenshot({ path: join(SCREENSHOTS, "api-docs.png") });

    expect({ blocked, problems }).toEqual({ blocked: [], problems: [] });
    expect(requested.some((u) => u.includes("/v1/docs/assets/"))).toBe(true);
    expect(requested.some((u) => u.endsWith("/v1/openapi.json"))).toBe(true);
  }, 60_000);
});
