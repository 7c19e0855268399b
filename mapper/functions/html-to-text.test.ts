/** `call.transform.html_to_text` through the evaluator: the conversion and its defaults and fallback. */
import { describe, expect, test } from "bun:test";
import { evaluateExpression } from "../index.ts";

const root = (html: string, text: string) => ({ message: { html, text } });

describe("call.transform.html_to_text", () => {
  test("converts the given html", () => {
    expect(
      evaluateExpression({ "call.transform.html_to_text": { html: "<h1>Hi</h1><p>there</p>" } }, {}),
    ).toMatch(/HI\s+there/);
  });
  test("defaults to message.html", () => {
    expect(evaluateExpression({ "call.transform.html_to_text": {} }, root("<b>bold</b>", "t"))).toBe("bold");
  });
  test("falls back to text when the html is empty", () => {
    expect(evaluateExpression({ "call.transform.html_to_text": { html: "", text: "plain" } }, {})).toBe(
      "plain",
    );
  });
  test("the text fallback is trimmed, as a conversion is", () => {
    expect(evaluateExpression({ "call.transform.html_to_text": {} }, root("", "Full Name: Ada\r\n"))).toBe(
      "Full Name: Ada",
    );
  });
});
