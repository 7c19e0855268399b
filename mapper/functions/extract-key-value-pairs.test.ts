import { describe, expect, test } from "bun:test";
import { compileMapper, evaluateExpression } from "../index.ts";
import { extractKeyValuePairs, normalizeKey } from "./extract-key-value-pairs.ts";

const kv = (args: Record<string, unknown>, message: Record<string, unknown> = {}) =>
  extractKeyValuePairs(args, { message }) as ReturnType<typeof extractKeyValuePairs>;

describe("call.extract.key_value_pairs: text", () => {
  const text = [
    "Order ID: AZ-123",
    "Order ID: AZ-124",
    "Customer Email: ada@example.com",
    "Ticket-Type: billing.",
    "Is this a question: yes?",
    "Great news: it shipped!",
    "See https://example.com/track",
    "Please note: we are closed on Monday",
    "10:30 standup",
    "a very long key with too many words: x",
    "Size = 10",
    "Empty:",
  ].join("\n");

  test("items, values (first value) and groups (all values) by normalized key", () => {
    const r = kv({ mode: "text" }, { text });
    expect(r.items[0]).toEqual({
      key: "Order ID",
      normalized_key: "order_id",
      value: "AZ-123",
      separator: ":",
      source: "text",
      line: 1,
    });
    expect(r.values).toEqual({
      order_id: "AZ-123",
      customer_email: "ada@example.com",
      ticket_type: "billing",
      size: "10",
    });
    expect(r.groups.order_id).toEqual(["AZ-123", "AZ-124"]);
    expect(r.items.map((i) => i.line)).toEqual([1, 2, 3, 4, 11]);
  });

  test("separators are tried in order; max_key_words and allow_prose widen or narrow keys", () => {
    expect(kv({ mode: "text", separators: ["="] }, { text }).values).toEqual({ size: "10" });
    expect(kv({ mode: "text", allow_prose: true }, { text }).values.please_note).toBe(
      "we are closed on Monday",
    );
    expect(kv({ mode: "text", max_key_words: 1 }, { text }).values).toEqual({
      ticket_type: "billing",
      size: "10",
    });
  });

  test("normalized keys: hyphens and whitespace become _", () => {
    expect(normalizeKey("Ticket-Type")).toBe("ticket_type");
    expect(normalizeKey("Customer   Email")).toBe("customer_email");
  });

  test("values keep internal whitespace and lose one trailing period", () => {
    expect(kv({ text: "Note: two  spaces here.." }).values.note).toBe("two  spaces here..");
    expect(kv({ text: "Address: 1 Main St." }).values.address).toBe("1 Main St");
  });
});

describe("call.extract.key_value_pairs: HTML", () => {
  const html = `<html><head><title>Title: no</title></head><body>
    <table><tr><td>Order ID:</td><td>AZ-9</td></tr><tr><th>Total</th><td>$10.00</td></tr></table>
    <dl><dt>Status</dt><dd>Shipped</dd></dl>
    <p><b>Carrier:</b> UPS<br><strong>Tracking</strong>: 1Z999</p>
    <p>Plain: line here</p>
    <div style="display:none">Hidden: yes</div>
    <p>Label one</p><p>value one</p>
  </body></html>`;

  test("table rows, definition lists, bold hints and visible lines; hidden content is skipped", () => {
    const r = kv({}, { html, text: "From: text only" });
    expect(r.values).toEqual({
      order_id: "AZ-9",
      total: "$10.00",
      status: "Shipped",
      carrier: "UPS",
      tracking: "1Z999",
      plain: "line here",
    });
    expect(r.items.map((i) => i.source)).toEqual([
      "html_table",
      "html_table",
      "html_dl",
      "html_strong",
      "html_text",
      "html_text",
    ]);
  });

  test("adjacent blocks pair only when allowed", () => {
    expect(kv({ allow_html_adjacent_blocks: true }, { html }).values.label_one).toBe("value one");
  });

  test("auto mode falls back to text when the HTML has no pairs; text mode ignores HTML", () => {
    expect(kv({}, { html: "<p>nothing to see</p>", text: "Ref: 42" }).values).toEqual({ ref: "42" });
    expect(kv({ mode: "text" }, { html, text: "Ref: 42" }).values).toEqual({ ref: "42" });
    expect(kv({ mode: "html" }, { html: "<p>nothing</p>", text: "Ref: 42" }).items).toEqual([]);
  });
});

describe("in a mapper", () => {
  test("the documented lookups work through vars", () => {
    const out = compileMapper({
      version: "v1",
      vars: [{ name: "kv", expr: { "call.extract.key_value_pairs": { mode: "text" } } }],
      output: {
        first_order_id: { var: "vars.kv.values.order_id" },
        all_order_ids: { var: "vars.kv.groups.order_id" },
        ticket_type: { var: "vars.kv.values.ticket_type" },
      },
    })({ message: { text: "Order ID: AZ-123\nOrder ID: AZ-124\nTicket-Type: billing" }, ctx: {} } as never);
    expect(out).toEqual({
      first_order_id: "AZ-123",
      all_order_ids: ["AZ-123", "AZ-124"],
      ticket_type: "billing",
    });
  });

  test("an expression argument is evaluated", () => {
    expect(
      evaluateExpression({ "call.extract.key_value_pairs": { text: { var: "t" } } }, { t: "A: 1" }),
    ).toMatchObject({ values: { a: "1" } });
  });
});
