/**
 * The dashboard in a real browser: Debian's Chromium driven by playwright-core against
 * the real service on a socket, with a delivery worker and a local receiver. Signs in, finds the event,
 * replays it and sees the new attempt, edits a route into an error shown at its JSON-pointer path, runs
 * the mapper playground, sets the project's notifications and a route's delivery settings (errors at their
 * fields first), checks that a POST without the CSRF token is refused, and screenshots every
 * page into `test-output/screenshots/`.
 *
 * Needs `/usr/bin/chromium` (`.ci/run` installs it); `MAILHOOK_SKIP_BROWSER=1` skips the file.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { launchChromium, SCREENSHOTS, SKIP_BROWSER } from "../support/browser.ts";
import { testDbKinds } from "../support/db.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";

const PDF = Buffer.from("%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n").toString("base64");

function invoiceEml(to: string): string {
  return [
    "From: Ada Billing <billing@acme.example>",
    `To: ${to}`,
    "Subject: Invoice 2041 from ACME",
    "Message-ID: <invoice-2041@acme.example>",
    "Date: Tue, 03 Mar 2026 10:00:00 +0000",
    "MIME-Version: 1.0",
    'Content-Type: multipart/mixed; boundary="b1"',
    "",
    "--b1",
    "Content-Type: text/plain; charset=utf-8",
    "",
    "Hello, your invoice is attached. Pay at https://pay.acme.example/inv/2041",
    "--b1",
    'Content-Type: application/pdf; name="invoice-2041.pdf"',
    'Content-Disposition: attachment; filename="invoice-2041.pdf"',
    "Content-Transfer-Encoding: base64",
    "",
    PDF,
    "--b1--",
    "",
  ].join("\r\n");
}

describe.skipIf(SKIP_BROWSER)("dashboard in Chromium", () => {
  let app: TestApp;
  let rx: Receiver;
  let worker: RunningWorker;
  let server: ReturnType<typeof Bun.serve>;
  let browser: BrowserContext;
  let page: Page;
  let base: string;
  let apiKey: string;
  let eventId: string;
  let routeId: string;

  const shot = (name: string) => page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });

  beforeAll(async () => {
    // Postgres when the suite runs against it: a cloned template is ready in ~1 s, where a fresh PGlite
    // costs many seconds on a loaded machine; the dashboard is the same on both.
    app = await createTestApp(testDbKinds().includes("postgres") ? "postgres" : "pglite");
    rx = await startReceiver();
    const project = await app.newProject("Acme Billing");
    apiKey = project.apiKey;
    const ep = await app.request("POST", "/v1/endpoints", { apiKey, body: { url: `${rx.url}/hooks/mail` } });
    const secret = await app.request("POST", "/v1/signing-secrets", { apiKey });
    const route = await app.request("POST", "/v1/routes", {
      apiKey,
      body: {
        name: "Invoices",
        endpoint_id: ep.body.id,
        signing_secret_kid: secret.body.kid,
        rule: { subject_contains: ["invoice"] },
      },
    });
    if (route.status !== 201) throw new Error(`route: ${route.status} ${route.text}`);
    routeId = route.body.id;
    worker = await startWorker(app.ctx, { pollMs: 50 });
    server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => app.api.handle(req) });
    base = `http://127.0.0.1:${server.port}`;

    const ingested = await app.request("POST", "/v1/messages", {
      apiKey,
      rawBody: invoiceEml(project.inbound),
      headers: { "content-type": "message/rfc822" },
    });
    if (ingested.status !== 202) throw new Error(`ingest: ${ingested.status} ${ingested.text}`);
    eventId = ingested.body.events[0].id;
    await rx.waitForRequests(1, 15_000);

    browser = await launchChromium();
    page = browser.pages()[0] ?? (await browser.newPage());
    page.setDefaultTimeout(10_000);
    // actions ask before they act (replay, delete): the user says yes
    page.on("dialog", (dialog) => dialog.accept());
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop(true);
    await worker?.stop();
    await rx?.close();
    await app?.close();
  });

  test("signs in with the API key into an httpOnly, SameSite=Strict cookie scoped to /ui", async () => {
    await page.goto(`${base}/ui/events`);
    expect(new URL(page.url()).pathname).toBe("/ui/sign-in");
    await shot("sign-in");
    await page.fill("#api_key", "mh_wrong");
    await page.click("button[type=submit]");
    await page.waitForSelector("text=That API key is wrong or disabled.");
    await page.fill("#api_key", apiKey);
    await Promise.all([page.waitForURL(`${base}/ui/events`), page.click("button[type=submit]")]);
    const [cookie] = (await browser.cookies(`${base}/ui/`)).filter((c) => c.name === "mh_session");
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Strict", path: "/ui" });
    expect(cookie?.value).not.toContain(apiKey);
  });

  test("finds the delivered event, replays it and sees the new attempt appear", async () => {
    await page.goto(`${base}/ui/events?status=delivered&route_id=${routeId}`);
    const row = page.locator("#events tbody tr", { hasText: "Invoice 2041 from ACME" });
    await row.locator(".badge-delivered").waitFor();
    await shot("events");
    await Promise.all([page.waitForURL(`${base}/ui/events/${eventId}`), row.locator("a.row-link").click()]);
    await page.waitForSelector("#attempt-1 .badge-success");
    expect(await page.textContent("#attempt-1")).toContain("/hooks/mail");
    expect(await page.textContent("#attempt-1")).toContain("***"); // the signature is redacted as stored
    await shot("event-detail");

    await page.click("#replay");
    await page.waitForSelector("#attempt-2 .badge-success", { timeout: 15_000 }); // the page refreshes itself
    expect(await page.textContent("#attempt-2 .tag")).toBe("replay");
    expect(rx.requests).toHaveLength(2);
    await shot("event-detail-replayed");
  }, 30_000);

  test("a route with an invalid pipeline shows the error at its JSON-pointer path", async () => {
    await page.goto(`${base}/ui/routes`);
    await shot("routes");
    await page.click(`a[href="/ui/routes/${routeId}"]`);
    const bad = {
      steps: [{ name: "map.custom_json", args: { version: "v1", output: { x: { "string.reverse": "a" } } } }],
    };
    await page.fill("#pipeline", JSON.stringify(bad, null, 2));
    await page.click("#route-form button[type=submit]");
    const errors = page.locator("#pipeline + .field-errors");
    await errors.waitFor();
    expect(await errors.textContent()).toContain("/pipeline/steps/0/args/output/x");
    expect(await page.getAttribute("#pipeline", "aria-invalid")).toBe("true");
    await shot("route-invalid");
  });

  test("a saved route shows the near-miss warnings of its custom_json config at their paths", async () => {
    await page.goto(`${base}/ui/routes/${routeId}`);
    const original = await page.inputValue("#pipeline");
    const typo = {
      steps: [
        { name: "map.custom_json", args: { version: "v1", output: { s: { varr: "message.subject" } } } },
      ],
    };
    await page.fill("#pipeline", JSON.stringify(typo, null, 2));
    await Promise.all([page.waitForURL(/notice=route-saved/), page.click("#route-form button[type=submit]")]);
    const warnings = page.locator("#pipeline-warnings");
    expect(await warnings.textContent()).toContain("/pipeline/steps/0/args/output/s/varr");
    expect(await warnings.textContent()).toContain('did you mean "var"');
    expect(await page.locator("#pipeline + .field-errors").count()).toBe(0);
    await shot("route-warnings");
    await page.fill("#pipeline", original);
    await Promise.all([page.waitForURL(/notice=route-saved/), page.click("#route-form button[type=submit]")]);
    expect(await page.locator("#pipeline-warnings").count()).toBe(0);
  });

  test("endpoints and a new signing secret shown once", async () => {
    await page.goto(`${base}/ui/endpoints`);
    await page.waitForSelector(`text=${rx.url}/hooks/mail`);
    await shot("endpoints");
    await page.goto(`${base}/ui/signing-secrets`);
    await page.click("text=New signing secret");
    expect(await page.textContent("#secret-value")).toMatch(/^whsec_/);
    await shot("signing-secrets-created");
    await page.goto(`${base}/ui/signing-secrets`);
    expect(await page.locator("#secret-value").count()).toBe(0);
  });

  test("notification settings: errors at their fields, then saved and shown as on", async () => {
    await page.goto(`${base}/ui/events`);
    await Promise.all([
      page.waitForURL(`${base}/ui/notifications`),
      page.click('nav a[href="/ui/notifications"]'),
    ]);
    expect(await page.textContent("#notifications-state")).toContain("off");
    await page.check("#enabled");
    await page.click("#notifications-form button[type=submit]");
    const endpointErrors = page.locator("#endpoint_id + .field-errors");
    await endpointErrors.waitFor();
    expect(await endpointErrors.textContent()).toContain("/notifications/endpoint_id");
    expect(await page.getAttribute("#endpoint_id", "aria-invalid")).toBe("true");
    await shot("notifications-invalid");
    await page.selectOption("#endpoint_id", { index: 1 });
    await page.selectOption("#signing_secret_kid", { index: 1 });
    await page.uncheck('input[name="types"][value="message.held"]');
    await Promise.all([
      page.waitForURL(/notice=notifications-saved/),
      page.click("#notifications-form button[type=submit]"),
    ]);
    expect(await page.textContent("#notifications-state")).toContain("on: 5 of 6 types");
    const project = (await app.request("GET", "/v1/project", { apiKey })).body;
    expect(project.notifications.types).not.toContain("message.held");
    expect(project.notifications.types).toHaveLength(5);
    await shot("notifications");
  });

  test("the route form sets expect_mail_within and a retry policy, refusing a bad duration at its field", async () => {
    await page.goto(`${base}/ui/routes/${routeId}`);
    await page.fill("#expect_mail_within", "10s");
    await page.click("#route-form button[type=submit]");
    const errors = page.locator("#expect_mail_within + .field-errors");
    await errors.waitFor();
    expect(await errors.textContent()).toContain("/expect_mail_within");
    await page.fill("#expect_mail_within", "6h");
    await page.fill("#retry_schedule", "10s, 1m");
    await Promise.all([page.waitForURL(/notice=route-saved/), page.click("#route-form button[type=submit]")]);
    expect(await page.inputValue("#expect_mail_within")).toBe("6h");
    expect(await page.inputValue("#retry_max_attempts")).toBe("3");
    await page.fill("#expect_mail_within", "");
    await page.fill("#retry_schedule", "");
    await page.fill("#retry_max_attempts", "");
    await Promise.all([page.waitForURL(/notice=route-saved/), page.click("#route-form button[type=submit]")]);
    expect(await page.inputValue("#retry_max_attempts")).toBe("");
  });

  test("the mapper playground runs a config on the stored message, live, and shows errors with paths", async () => {
    await page.goto(`${base}/ui/playground`);
    const output = page.locator("#preview-output");
    await page.waitForFunction(() =>
      document.getElementById("preview-output")?.textContent?.includes("INVOICE"),
    );
    expect(JSON.parse((await output.textContent()) ?? "")).toMatchObject({
      subject: "INVOICE 2041 FROM ACME",
      from: "billing@acme.example",
      attachments: ["invoice-2041.pdf"],
    });
    await shot("playground");
    await page.fill("#config", JSON.stringify({ version: "v1", output: { n: { "string.reverse": 1 } } }));
    await page.waitForSelector("#preview-errors:not([hidden])");
    expect(await page.textContent("#preview-errors")).toContain("/output/n");
    await shot("playground-error");
    await page.fill(
      "#config",
      JSON.stringify({ version: "v1", output: { n: { mapp: [[1], { var: "" }] } } }),
    );
    await page.waitForSelector("#preview-warnings:not([hidden])");
    expect(await page.textContent("#preview-warnings")).toContain("/output/n/mapp");
    expect(await page.textContent("#preview-warnings")).toContain('did you mean "map"');
    expect(await page.textContent("#preview-status")).toBe("ok, 1 warning");
    expect(await page.isHidden("#preview-errors")).toBe(true);
    await shot("playground-warning");
    await page.fill("#config", JSON.stringify({ version: "v1", output: { n: { map: [[1], { var: "" }] } } }));
    await page.waitForSelector("#preview-warnings[hidden]", { state: "attached" });
    expect(await page.textContent("#preview-status")).toBe("ok");
  });

  test("a POST without the CSRF token is refused, even from the same origin", async () => {
    await page.goto(`${base}/ui/events/${eventId}`);
    const statuses = await page.evaluate(async (id) => {
      const form = await fetch(`/ui/events/${id}/replay`, { method: "POST", body: new URLSearchParams() });
      const json = await fetch("/ui/api/mapper/preview", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ config: "{}" }),
      });
      return [form.status, json.status];
    }, eventId);
    expect(statuses).toEqual([403, 403]);
    expect(rx.requests).toHaveLength(2);
  });

  test("signs out", async () => {
    await page.goto(`${base}/ui/events`);
    await Promise.all([page.waitForURL(/\/ui\/sign-in/), page.click("text=Sign out")]);
    await page.goto(`${base}/ui/events`);
    expect(new URL(page.url()).pathname).toBe("/ui/sign-in");
  });
});
