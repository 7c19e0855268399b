/**
 * The structured helpers, scoped blocks and substr's object form end to end: a raw HTML message posted to
 * `POST /v1/messages`, mapped by a route's `map.custom_json` on the mapper worker pool and delivered to a
 * receiver on loopback; and a required `extract.dom` selector that matches nothing, in preview (422) and
 * at delivery (event dead with `mapper:mapper.required_missing`).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { isSettled, seedRoute, waitForEvent } from "../support/seed-events.ts";

const HTML = [
  "<html><head><style>td{}</style></head><body>",
  "<p>Thanks for your order.</p>",
  "<p><b>Order ID:</b> AZ-123<br><b>Customer Email:</b> ada@example.com</p>",
  "<table><thead><tr><th>Item</th><th>Qty</th><th>Total</th></tr></thead>",
  "<tbody><tr><td>Widget</td><td>2</td><td>$10.00</td></tr><tr><td>Gadget</td><td>3</td><td>$15.00</td></tr></tbody></table>",
  '<p><a class="track" href="https://carrier.example/track/AZ-123">Track your parcel</a></p>',
  "</body></html>",
].join("\n");

const raw = (id: string) =>
  [
    "From: Shop <orders@shop.example>",
    "To: inbox@in.localhost",
    "Subject: Your order AZ-123 has shipped",
    `Message-ID: <${id}@shop.example>`,
    "Date: Thu, 01 Jan 2026 10:00:00 +0000",
    "MIME-Version: 1.0",
    "Content-Type: text/html; charset=utf-8",
    "",
    HTML,
    "",
  ].join("\r\n");

const v = (path: string) => ({ var: path });

const config = {
  version: "v1",
  vars: [
    { name: "kv", expr: { "call.extract.key_value_pairs": {} } },
    { name: "tables", expr: { "call.extract.tables": {} } },
    {
      name: "tracking",
      expr: {
        "call.extract.dom": { selector_type: "css", selector: "a.track", value: "attr", attr: "href" },
      },
    },
  ],
  output: {
    order_id: v("vars.kv.values.order_id"),
    customer: v("vars.kv.values.customer_email"),
    widget_qty: v("vars.tables.tables[0].lookup.by_row.widget.qty"),
    lines: {
      map: {
        over: v("vars.tables.tables[0].rows"),
        as: "row",
        do: {
          vars: [{ name: "total", expr: v("row.values.total") }],
          output: { item: v("row.lookup_key"), total: v("vars.total") },
        },
      },
    },
    tracking_url: v("vars.tracking.value"),
    short_subject: { substr: { value: v("message.subject"), start: 0, end: 10 } },
  },
};

const requiredConfig = {
  version: "v1",
  output: {
    "call.extract.dom": { selector_type: "css", selector: "#invoice-number", value: "text", required: true },
  },
};

for (const kind of testDbKinds()) {
  describe(`structured helpers at delivery (${kind})`, () => {
    let app: TestApp;
    let rx: Receiver;
    let worker: RunningWorker;

    beforeAll(async () => {
      app = await createTestApp(kind);
      rx = await startReceiver();
      worker = await startWorker(app.ctx, { concurrency: 2, pollMs: 100 });
    }, 60_000);
    afterAll(async () => {
      await worker?.stop();
      await rx?.close();
      await app?.close();
    });

    test("a route's custom_json with the helpers, a scoped block and substr's object form is delivered", async () => {
      const route = await seedRoute(app, {
        url: rx.url,
        pipeline: { steps: [{ name: "map.custom_json", args: config }] },
      });
      rx.clear();
      const r = await app.request("POST", "/v1/messages", {
        apiKey: route.apiKey,
        rawBody: raw("helpers-1"),
        headers: { "content-type": "message/rfc822" },
      });
      expect(r.status, r.text).toBe(202);
      const event = await waitForEvent(app.ctx, r.body.events[0].id, isSettled, 15_000);
      expect(event.status, JSON.stringify(event)).toBe("delivered");
      const [req] = await rx.waitForRequests(1);
      expect(JSON.parse(req!.text)).toEqual({
        order_id: "AZ-123",
        customer: "ada@example.com",
        widget_qty: "2",
        lines: [
          { item: "widget", total: "$10.00" },
          { item: "gadget", total: "$15.00" },
        ],
        tracking_url: "https://carrier.example/track/AZ-123",
        short_subject: "Your order",
      });
    }, 30_000);

    test("preview runs the same config on the raw message", async () => {
      const { apiKey } = await app.newProject("preview");
      const r = await app.request("POST", "/v1/mapper/preview", {
        apiKey,
        body: { config, message_raw: raw("helpers-preview") },
      });
      expect(r.status, r.text).toBe(200);
      expect(r.body.output.order_id).toBe("AZ-123");
      expect(r.body.output.lines).toHaveLength(2);
    });

    test("a required DOM selector that matches nothing: 422 in preview, dead at delivery", async () => {
      const { apiKey } = await app.newProject("required");
      const p = await app.request("POST", "/v1/mapper/preview", {
        apiKey,
        body: { config: requiredConfig, message_raw: raw("helpers-required-preview") },
      });
      expect(p.status, p.text).toBe(422);
      expect(p.body.error.code).toBe("mapper.runtime_error");
      expect(p.body.error.details[0].code).toBe("mapper.required_missing");

      const route = await seedRoute(app, {
        url: rx.url,
        pipeline: { steps: [{ name: "map.custom_json", args: requiredConfig }] },
      });
      rx.clear();
      const r = await app.request("POST", "/v1/messages", {
        apiKey: route.apiKey,
        rawBody: raw("helpers-required"),
        headers: { "content-type": "message/rfc822" },
      });
      expect(r.status, r.text).toBe(202);
      const event = await waitForEvent(app.ctx, r.body.events[0].id, isSettled, 15_000);
      expect(event.status).toBe("dead");
      const detail = await app.request("GET", `/v1/events/${event.id}`, { apiKey: route.apiKey });
      expect(detail.body.last_error).toBe("mapper:mapper.required_missing");
      expect(rx.requests).toHaveLength(0);
    }, 30_000);
  });
}
