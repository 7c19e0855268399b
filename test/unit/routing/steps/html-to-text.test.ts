/** `html_to_text`: its argument checks, and the text each argument gives for one HTML body. */
import { describe, expect, test } from "bun:test";
import { applyTransforms } from "../../../../services/routing/pipeline.ts";
import { htmlToTextStep } from "../../../../services/routing/steps/html-to-text.ts";
import { makeMessage } from "../../../support/messages.ts";
import { expectIssues, expectSchemaAgrees, generic, type RejectCase } from "./support.ts";

const HTML = [
  "<h1>Order  shipped</h1>",
  '<p>Hello   <b>Ann</b>,\n your order   is on its way. Track it <a href="https://t.example/1">here</a>',
  ' or at <a href="https://t.example/1">https://t.example/1</a>.</p>',
  "<table><tr><th>Item</th><th>Qty</th></tr><tr><td>Red  shoe</td><td>2</td></tr>",
  "<tr><td>Blue\nhat</td><td>1</td></tr></table>",
  "<p>A long line that goes on and on and on well past the forty character mark for sure.</p>",
  '<img src="x.png" alt="logo">',
].join("");

const run = (args: Record<string, unknown>, over = {}) =>
  applyTransforms(
    [{ name: "html_to_text", args }],
    makeMessage({ html: HTML, text: "the text part", ...over }),
  );

describe("html_to_text validation", () => {
  const invalid: RejectCase[] = [
    [
      "bad values",
      {
        steps: [
          {
            name: "html_to_text",
            args: {
              prefer: "markdown",
              width: -1,
              preserve_links: "yes",
              collapse_whitespace: 1,
              keep_tables: null,
            },
          },
          generic,
        ],
      },
      [
        { path: "/pipeline/steps/0/args/prefer", message: /"html" or "text"/ },
        { path: "/pipeline/steps/0/args/width", message: /integer from 0/ },
        { path: "/pipeline/steps/0/args/preserve_links", message: /boolean/ },
        { path: "/pipeline/steps/0/args/collapse_whitespace", message: /boolean/ },
        { path: "/pipeline/steps/0/args/keep_tables", message: /boolean/ },
      ],
    ],
    [
      "an unknown argument",
      { steps: [{ name: "html_to_text", args: { wrap: 0 } }, generic] },
      [{ path: "/pipeline/steps/0/args/wrap", message: /unknown argument "wrap"/ }],
    ],
    [
      "a fractional width",
      { steps: [{ name: "html_to_text", args: { width: 1.5 } }, generic] },
      [{ path: "/pipeline/steps/0/args/width", message: /integer/ }],
    ],
  ];
  test.each(invalid)("rejects %s with its path", (_name, pipeline, expected) =>
    expectIssues(pipeline, expected),
  );

  test.each([
    [{}, true],
    [{ prefer: "html", width: 0, preserve_links: true, collapse_whitespace: true, keep_tables: true }, true],
    [{ prefer: "text", width: 1000 }, true],
    [{ width: 1001 }, false],
    [{ prefer: "both" }, false],
    [{ keep_tables: "no" }, false],
  ] as [Record<string, unknown>, boolean][])("%j: schema and validator agree (valid=%p)", (args, valid) =>
    expectSchemaAgrees(htmlToTextStep, args, valid),
  );
});

describe("html_to_text", () => {
  test("the defaults: wrapped at 80, links as text (url), whitespace collapsed, tables linearized", () => {
    expect(run({}).text).toBe(
      [
        "Order shipped",
        "",
        "Hello Ann, your order is on its way. Track it here (https://t.example/1) or at",
        "https://t.example/1.",
        "",
        "Item",
        "Qty",
        "Red shoe",
        "2",
        "Blue hat",
        "1",
        "",
        "A long line that goes on and on and on well past the forty character mark for",
        "sure.",
      ].join("\n"),
    );
    expect(run({}).text_source).toBe("html");
  });

  test("width 0 does not wrap; width 40 wraps at 40", () => {
    const unwrapped = run({ width: 0 }).text;
    expect(unwrapped).toContain("Track it here (https://t.example/1) or at https://t.example/1.");
    expect(unwrapped).toContain(
      "A long line that goes on and on and on well past the forty character mark for sure.",
    );
    for (const line of run({ width: 40 }).text.split("\n")) expect(line.length).toBeLessThanOrEqual(40);
  });

  test("preserve_links false keeps only the link text", () => {
    expect(run({ width: 0, preserve_links: false }).text).toContain(
      "Track it here or at https://t.example/1.",
    );
  });

  test("keep_tables renders rows of tab-separated cells", () => {
    expect(run({ width: 0, keep_tables: true }).text).toContain("Item\tQty\nRed shoe\t2\nBlue hat\t1");
  });

  test("collapse_whitespace false keeps the line breaks of the HTML source", () => {
    const text = run({ width: 0, collapse_whitespace: false }).text;
    expect(text).toContain("Hello Ann,\nyour order is on its way.");
  });

  test('prefer "text" keeps a non-empty text body and converts only without one', () => {
    expect(run({ prefer: "text" }).text).toBe("the text part");
    expect(run({ prefer: "text" }, { text: "  " }).text.startsWith("Order shipped")).toBe(true);
  });

  test("a message without HTML is left unchanged, and the input message is never modified", () => {
    const message = makeMessage({ html: "", text: "plain" });
    expect(applyTransforms([{ name: "html_to_text", args: {} }], message)).toBe(message);
    const withHtml = makeMessage({ html: HTML });
    const before = structuredClone(withHtml);
    applyTransforms([{ name: "html_to_text", args: {} }], withHtml);
    expect(withHtml).toEqual(before);
  });
});
