/**
 * Every dashboard page in Chromium at 360, 768 and 1440 px: axe-core finds no serious or critical
 * accessibility violation, nothing overflows the page sideways, the page title is not covered by the
 * navigation, and each page is screenshotted into `test-output/screenshots/` (kept as CI output). The
 * Overview shows the last 24 hours' numbers and draws its charts with the chart library the dashboard
 * serves itself.
 *
 * Needs `/usr/bin/chromium` (`.ci/run` installs it); `MAILHOOK_SKIP_BROWSER=1` skips the file.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import type { BrowserContext, Page } from "playwright-core";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { launchChromium, SCREENSHOTS, SKIP_BROWSER } from "../support/browser.ts";
import { testDbKinds } from "../support/db.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const WIDTHS = [360, 768, 1440] as const;

function mail(to: string, n: number): string {
  return [
    "From: Ada <ada@example.com>",
    `To: ${to}`,
    `Subject: Order ${n}`,
    `Message-ID: <order-${n}@example.com>`,
    "MIME-Version: 1.0",
    "Content-Type: text/plain; charset=utf-8",
    "",
    `Order ${n} is ready.`,
    "",
  ].join("\r\n");
}

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

describe.skipIf(SKIP_BROWSER)("console quality in Chromium", () => {
  let app: TestApp;
  let rx: Receiver;
  let worker: RunningWorker;
  let server: ReturnType<typeof Bun.serve>;
  let browser: BrowserContext;
  let page: Page;
  let base: string;
  let apiKey: string;
  const pages: { name: string; path: string }[] = [];

  beforeAll(async () => {
    app = await createTestApp(testDbKinds().includes("postgres") ? "postgres" : "pglite", {
      env: { RETRY_SCHEDULE: "0,10ms,10ms,10ms,10ms" },
    });
    rx = await startReceiver();
    // the first delivery is refused for good: a dead event and a failing endpoint on the Overview
    rx.setBehaviour((req) => ({ status: req.index === 0 ? 410 : 200 }));
    const project = await app.newProject("Acme Orders");
    apiKey = project.apiKey;
    const ep = await app.request("POST", "/v1/endpoints", { apiKey, body: { url: `${rx.url}/hooks/mail` } });
    const secret = await app.request("POST", "/v1/signing-secrets", { apiKey });
    const route = await app.request("POST", "/v1/routes", {
      apiKey,
      body: { name: "Orders", endpoint_id: ep.body.id, signing_secret_kid: secret.body.kid, rule: {} },
    });
    // An own domain (verified here directly: these tests make no DNS lookups) with an address.
    const domain = await app.request("POST", "/v1/domains", {
      apiKey,
      body: { domain: "orders.example.com" },
    });
    await app.ctx.database.rows(sql`update domains set verified = true where id = ${domain.body.id}`);
    await app.request("POST", "/v1/domains", {
      apiKey,
      body: { domain: "pending.example.com", catch_all: true },
    });
    await app.request("POST", "/v1/addresses", { apiKey, body: { address: "invoices@orders.example.com" } });
    worker = await startWorker(app.ctx, { pollMs: 50 });
    server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => app.api.handle(req) });
    base = `http://127.0.0.1:${server.port}`;
    let eventId = "";
    for (const n of [1, 2, 3]) {
      const r = await app.request("POST", "/v1/messages", {
        apiKey,
        rawBody: mail(project.inbound, n),
        headers: { "content-type": "message/rfc822" },
      });
      if (r.status !== 202) throw new Error(`ingest: ${r.status} ${r.text}`);
      eventId ||= r.body.events[0].id;
    }
    await rx.waitForRequests(3, 20_000);
    pages.push(
      { name: "overview", path: "/ui/overview" },
      { name: "events", path: "/ui/events" },
      { name: "event", path: `/ui/events/${eventId}` },
      { name: "routes", path: "/ui/routes" },
      { name: "route-new", path: "/ui/routes/new" },
      { name: "route-edit", path: `/ui/routes/${route.body.id}` },
      { name: "endpoints", path: "/ui/endpoints" },
      { name: "endpoint-new", path: "/ui/endpoints/new" },
      { name: "endpoint-edit", path: `/ui/endpoints/${ep.body.id}` },
      { name: "signing-secrets", path: "/ui/signing-secrets" },
      { name: "notifications", path: "/ui/notifications" },
      { name: "domains", path: "/ui/domains" },
      { name: "held", path: "/ui/held" },
      { name: "mailboxes", path: "/ui/mailboxes" },
      { name: "playground", path: "/ui/playground" },
    );
    browser = await launchChromium();
    page = browser.pages()[0] ?? (await browser.newPage());
    page.setDefaultTimeout(15_000);
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop(true);
    await worker?.stop();
    await rx?.close();
    await app?.close();
  });

  /** Runs axe-core on the loaded page; returns its serious and critical violations. */
  async function seriousViolations(): Promise<AxeViolation[]> {
    // evaluate() runs outside the page's Content-Security-Policy, which allows no inline script
    await page.evaluate(AXE_SOURCE);
    const result = (await page.evaluate(() =>
      (window as unknown as { axe: { run: (o: unknown) => Promise<unknown> } }).axe.run({
        runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] },
      }),
    )) as { violations: AxeViolation[] };
    return result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  }

  /** Page-level layout facts: sideways overflow, and whether the h1 is the element seen at its centre. */
  function layout() {
    return page.evaluate(() => {
      const doc = document.documentElement;
      const h1 = document.querySelector("h1");
      let titleVisible = false;
      if (h1) {
        h1.scrollIntoView({ block: "center" });
        const box = h1.getBoundingClientRect();
        const seen = document.elementFromPoint(
          box.left + Math.min(20, box.width / 2),
          box.top + box.height / 2,
        );
        titleVisible = Boolean(seen && (seen === h1 || h1.contains(seen)));
        window.scrollTo(0, 0);
      }
      return { overflow: doc.scrollWidth - doc.clientWidth, titleVisible };
    });
  }

  test("signs in", async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.goto(`${base}/ui/sign-in`);
    expect(await seriousViolations()).toEqual([]);
    await page.fill("#api_key", apiKey);
    await Promise.all([page.waitForURL(/\/ui\/events/), page.click("button[type=submit]")]);
  });

  test("the Overview shows the last 24 hours and draws its charts", async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.goto(`${base}/ui/overview`);
    const tiles = await page.$$eval(".tile", (els) =>
      Object.fromEntries(
        els.map((e) => [
          e.querySelector(".tile-label")?.textContent?.trim(),
          e.querySelector(".tile-value")?.textContent?.trim(),
        ]),
      ),
    );
    expect(tiles["Messages in"]).toBe("3");
    expect(tiles["Attempts delivered"]).toBe("2");
    expect(tiles["Attempts failed"]).toBe("1");
    expect(tiles["Events dead"]).toBe("1");
    expect(tiles["Latency p50 / p99"]).toMatch(/^\d+ ms \/ \d+ ms$/);
    // uPlot draws into a canvas in each chart
    await page.waitForSelector("[data-chart=messages] canvas");
    await page.waitForSelector("[data-chart=deliveries] canvas");
    expect(await page.textContent("section:has(h2:text('Failing endpoints'))")).toContain("/hooks/mail");
    // the root of the service and of the dashboard both lead here
    await page.goto(`${base}/`);
    expect(new URL(page.url()).pathname).toBe("/ui/overview");
  });

  test("a JSON syntax error in the route editor names its line and column", async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.goto(`${base}/ui/routes/new`);
    await page.fill("#name", "Broken");
    await page.fill("#pipeline", '{\n  "steps": [\n    {"name": "map.generic_json" "args": {}}\n  ]\n}');
    await page.click("#route-form button[type=submit]");
    await page.waitForSelector("text=a comma is expected at line 3, column 33");
  });

  test("the structured route editor writes the rule and the pipeline JSON, and follows edits of the JSON", async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.goto(`${base}/ui/routes/new`);
    await page.fill("#name", "Built with forms");
    await page.selectOption("#endpoint_id", { index: 1 });
    await page.selectOption("#signing_secret_kid", { index: 1 });
    // a rule condition from the builder
    await page.selectOption("section[aria-label='Rule builder'] select", "subject_contains");
    await page.fill("section[aria-label='Rule builder'] textarea", "invoice\nreceipt");
    expect(JSON.parse(await page.inputValue("#rule"))).toEqual({ subject_contains: ["invoice", "receipt"] });
    // a transform before the final step, its form filled in
    await page.selectOption("section[aria-label='Pipeline steps'] select >> nth=-1", "strip_attachments_if");
    const pipeline = () => page.inputValue("#pipeline").then((t) => JSON.parse(t));
    expect((await pipeline()).steps.map((s: { name: string }) => s.name)).toEqual([
      "strip_attachments_if",
      "map.generic_json",
    ]);
    await page.getByLabel("max_size_kb (optional)").fill("512");
    expect((await pipeline()).steps[0].args).toMatchObject({ max_size_kb: 512 });
    // an edit of the JSON redraws the forms
    await page.fill("#rule", '{"from_domains": ["acme.example"]}');
    await page.waitForSelector("section[aria-label='Rule builder'] label:text('from_domains')");
    await Promise.all([
      page.waitForURL(/\/ui\/routes(\?|\/|$)/),
      page.click("#route-form button[type=submit]"),
    ]);
    const routes = await app.request("GET", "/v1/routes", { apiKey });
    const saved = routes.body.items.find((r: { name: string }) => r.name === "Built with forms");
    expect(saved.rule).toEqual({ from_domains: ["acme.example"] });
    expect(saved.pipeline.steps[0]).toMatchObject({
      name: "strip_attachments_if",
      args: { max_size_kb: 512 },
    });
  });

  test("an event's attempts are collapsed but for the newest", async () => {
    // the dead event (refused once) replayed: two attempts
    const dead = await app.request("GET", "/v1/events?status=dead", { apiKey });
    const id = dead.body.items[0].id as string;
    expect((await app.request("POST", `/v1/events/${id}/replay`, { apiKey })).status).toBe(202);
    await page.goto(`${base}/ui/events/${id}`);
    await page.waitForSelector("#attempt-2 .badge-success", { timeout: 20_000 }); // the page refreshes itself
    const open = (n: number) => page.$eval(`#attempt-${n}`, (d) => (d as HTMLDetailsElement).open);
    expect(await open(1)).toBe(false);
    expect(await open(2)).toBe(true);
    await page.click("#attempt-1 > summary");
    expect(await open(1)).toBe(true);
  });

  test("messages: search, view (sandboxed HTML, attachment, raw), erase", async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    const post = async (raw: string) => {
      const r = await app.request("POST", "/v1/messages", {
        apiKey,
        rawBody: raw,
        headers: { "content-type": "message/rfc822" },
      });
      if (r.status !== 202) throw new Error(`ingest: ${r.status} ${r.text}`);
      return r.body.events[0].id as string;
    };
    const boundary = "b1";
    const htmlMail = (subject: string, id: string) =>
      [
        "From: Grace <grace@example.com>",
        "To: team@example.org",
        `Subject: ${subject}`,
        `Message-ID: <${id}@example.com>`,
        "MIME-Version: 1.0",
        `Content-Type: multipart/mixed; boundary="${boundary}"`,
        "",
        `--${boundary}`,
        "Content-Type: multipart/alternative; boundary=alt",
        "",
        "--alt",
        "Content-Type: text/plain; charset=utf-8",
        "",
        "Plain words about the kestrel report.",
        "--alt",
        "Content-Type: text/html; charset=utf-8",
        "",
        `<p id="hello">Hello in HTML</p><img src="${rx.url}/pixel.png" alt="pixel"><script>fetch("${rx.url}/script-ran")</script>`,
        "--alt--",
        `--${boundary}`,
        'Content-Type: text/plain; name="notes.txt"',
        'Content-Disposition: attachment; filename="notes.txt"',
        "",
        "attachment notes",
        `--${boundary}--`,
        "",
      ].join("\r\n");
    await post(htmlMail("Kestrel report", "kestrel-keep"));
    const eventId = await post(htmlMail("Falcon report to erase", "falcon-erase"));
    await rx.waitForRequests(5, 20_000);

    // search
    await page.goto(`${base}/ui/messages`);
    await page.fill("input[name=q]", "falcon");
    await Promise.all([page.waitForURL(/q=falcon/), page.click("form[role=search] button[type=submit]")]);
    const found = await page.$$eval("#messages tbody tr", (rows) => rows.map((r) => r.textContent ?? ""));
    expect(found).toHaveLength(1);
    expect(found[0]).toContain("Falcon report to erase");
    const kept = await app.request("GET", "/v1/messages?subject=Kestrel", { apiKey });
    expect(kept.body.items).toHaveLength(1);
    pages.push(
      { name: "messages", path: "/ui/messages" },
      { name: "message", path: `/ui/messages/${kept.body.items[0].id}` },
    );

    // view
    await Promise.all([page.waitForURL(/\/ui\/messages\/msg_/), page.click("#messages a.row-link")]);
    expect(await page.textContent("h1")).toContain("Falcon report to erase");
    expect(await page.textContent("#message-text")).toContain("Plain words about the kestrel report.");
    const frame = page.frameLocator("#html-preview");
    expect(await frame.locator("#hello").textContent()).toBe("Hello in HTML");
    expect(await page.getAttribute("#html-preview", "sandbox")).toBe("");
    expect(await page.textContent("#message-events")).toContain(eventId);
    const attHref = (await page.getAttribute("#attachments a", "href")) as string;
    const att = await page.context().request.get(`${base}${attHref}`);
    expect(att.status()).toBe(200);
    expect(await att.text()).toBe("attachment notes");
    const raw = await page.context().request.get(`${base}/ui/messages/${page.url().split("/").pop()}/raw`);
    expect(raw.status()).toBe(200);
    expect(await raw.text()).toContain("Message-ID: <falcon-erase@example.com>");
    // the preview neither ran its script nor loaded its remote image
    await Bun.sleep(300);
    expect(rx.requests.map((r) => r.path)).not.toContain("/script-ran");
    expect(rx.requests.map((r) => r.path)).not.toContain("/pixel.png");

    // erase: confirmed, reported, gone
    page.once("dialog", (d) => d.accept());
    await Promise.all([page.waitForURL(/notice=message-erased/), page.click("#erase")]);
    expect(await page.textContent("body")).toContain("Message erased");
    expect(await page.textContent("body")).not.toContain("Falcon report to erase");
    expect(
      (await app.request("GET", "/v1/messages/%3Cfalcon-erase%40example.com%3E", { apiKey })).status,
    ).toBe(404);
    await page.goto(`${base}/ui/events/${eventId}`);
    expect(await page.textContent("#message-erased")).toContain("erased");
    expect(await page.isDisabled("#replay")).toBe(true);
    // the other message is still there (its page is one of the pages checked below)
    await page.goto(`${base}/ui/messages/${kept.body.items[0].id}`);
    expect(await page.textContent("h1")).toContain("Kestrel report");
  }, 60_000);

  for (const width of WIDTHS) {
    test(`every page at ${width} px: no serious accessibility violation, no sideways overflow, title visible`, async () => {
      await page.setViewportSize({ width, height: 900 });
      const problems: string[] = [];
      for (const p of pages) {
        await page.goto(`${base}${p.path}`);
        await page.screenshot({ path: join(SCREENSHOTS, `${p.name}-${width}.png`), fullPage: true });
        for (const v of await seriousViolations()) {
          problems.push(
            `${p.path} @${width}: ${v.id} (${v.impact}) ${v.help} — ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`,
          );
        }
        const { overflow, titleVisible } = await layout();
        if (overflow > 1) problems.push(`${p.path} @${width}: the page scrolls sideways by ${overflow} px`);
        if (!titleVisible) problems.push(`${p.path} @${width}: the page title is covered`);
      }
      expect(problems).toEqual([]);
    }, 120_000);
  }
});
