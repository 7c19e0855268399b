import { describe, expect, test } from "bun:test";
import { lineAndColumn, parseJsonText } from "../../../services/lib/json-text.ts";

describe("parseJsonText", () => {
  test("valid JSON parses", () => {
    expect(parseJsonText('{"a": [1, 2, {"b": null}]}')).toEqual({
      ok: true,
      value: { a: [1, 2, { b: null }] },
    });
  });

  test.each([
    ['{\n  "a": 1,\n  "b": x\n}', 3, 8, "unexpected character"],
    ['{\n  "a": 1\n  "b": 2\n}', 3, 3, "a comma is expected"],
    ['{"a": 1,}', 1, 9, "a property name in double quotes is expected"],
    ['{"a": 1', 1, 8, "a closing } is expected"],
    ["", 1, 1, "a value is expected"],
    ['{"a": "x"} // note', 1, 12, "comments are not allowed"],
    ["[1, 2]\n]", 2, 1, "nothing may follow the value"],
  ])("%j → line %d, column %d", (text, line, column, problem) => {
    const r = parseJsonText(text);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect({ line: r.line, column: r.column }).toEqual({ line, column });
    expect(r.message).toBe(`${problem} at line ${line}, column ${column}`);
  });

  test("a raw control character inside a string is refused, as JSON.parse refuses it", () => {
    expect(parseJsonText('{"a": "x\ty"}').ok).toBe(false);
  });

  test("lineAndColumn counts from 1", () => {
    expect(lineAndColumn("ab\ncd", 4)).toEqual({ line: 2, column: 2 });
  });
});
