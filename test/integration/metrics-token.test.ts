/**
 * `METRICS_TOKEN`: with it set, `/metrics` (counts across every project) answers only a scrape that
 * carries `Authorization: Bearer <token>`; the health probes stay open. Re-runs the unauthenticated
 * scrape, a wrong token, another scheme, and the right token. Without the variable the endpoint is
 * open (test/integration/ops.test.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";

const TOKEN = "scrape-token_0123456789abcdef";

for (const kind of testDbKinds()) {
  describe(`/metrics with METRICS_TOKEN on ${kind}`, () => {
    let app: TestApp;

    beforeAll(async () => {
      app = await createTestApp(kind, { env: { METRICS_TOKEN: TOKEN } });
    }, 30_000);
    afterAll(async () => {
      await app?.close();
    });

    const refusals: [string, Record<string, string>, string][] = [
      ["no Authorization header", {}, "auth.missing_metrics_token"],
      [
        "another scheme",
        { authorization: `Basic ${btoa(`prometheus:${TOKEN}`)}` },
        "auth.missing_metrics_token",
      ],
      ["the token without a scheme", { authorization: TOKEN }, "auth.missing_metrics_token"],
      ["a wrong token", { authorization: "Bearer not-the-token" }, "auth.invalid_metrics_token"],
      [
        "a prefix of the token",
        { authorization: `Bearer ${TOKEN.slice(0, -1)}` },
        "auth.invalid_metrics_token",
      ],
      ["the token with a suffix", { authorization: `Bearer ${TOKEN}x` }, "auth.invalid_metrics_token"],
      ["the token as an API key", { "x-api-key": TOKEN }, "auth.missing_metrics_token"],
    ];
    for (const [name, headers, code] of refusals) {
      test(`refuses a scrape with ${name}: 401 ${code}, no metrics`, async () => {
        const r = await app.request("GET", "/metrics", { headers });
        expect(r.status, r.text).toBe(401);
        expect(r.body.error.code).toBe(code);
        expect(r.headers.get("www-authenticate")).toStartWith('Bearer realm="metrics"');
        expect(r.text).not.toContain("mailhook_events");
      });
    }

    test("answers the right bearer token (scheme in any case) with the metrics", async () => {
      for (const scheme of ["Bearer", "bearer"]) {
        const r = await app.request("GET", "/metrics", { headers: { authorization: `${scheme} ${TOKEN}` } });
        expect(r.status, r.text).toBe(200);
        expect(r.headers.get("content-type")).toStartWith("text/plain; version=0.0.4");
        expect(r.text).toContain("# TYPE mailhook_events gauge");
      }
    });

    test("the health probes stay open", async () => {
      expect((await app.request("GET", "/healthz")).status).toBe(200);
      const ready = await app.request("GET", "/readyz");
      expect(ready.status, ready.text).toBe(200);
    });
  });
}
