import { describe, expect, test } from "bun:test";
import { escapeHtml, html, prettyJson, SafeHtml, unsafeRaw } from "../../../services/ui/html.ts";

describe("escapeHtml", () => {
  test.each([
    ["<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"],
    ['" onmouseover="x', "&quot; onmouseover=&quot;x"],
    ["' autofocus onfocus='x", "&#x27; autofocus onfocus=&#x27;x"],
    ["a & b", "a &amp; b"],
    ["&amp;", "&amp;amp;"],
    ["plain text ✉ ü", "plain text ✉ ü"],
    ["", ""],
  ])("escapes %p", (input, expected) => {
    expect(escapeHtml(input)).toBe(expected);
  });
});

describe("html template", () => {
  test("escapes every interpolated string, in content and in attributes", () => {
    const name = '"><img src=x onerror=alert(1)>';
    const out = html`<a title="${name}">${name}</a>`.value;
    expect(out).toBe(
      '<a title="&quot;&gt;&lt;img src=x onerror=alert(1)&gt;">&quot;&gt;&lt;img src=x onerror=alert(1)&gt;</a>',
    );
    expect(out).not.toContain("<img");
  });

  test("inserts nested fragments and lists of them without escaping them twice", () => {
    const items = ["<b>", "a&b"].map((x) => html`<li>${x}</li>`);
    expect(html`<ul>${items}</ul>`.value).toBe("<ul><li>&lt;b&gt;</li><li>a&amp;b</li></ul>");
  });

  test("renders numbers and true as text, and null, undefined and false as nothing", () => {
    expect(html`${1}|${true}|${null}|${undefined}|${false}|${0}`.value).toBe("1|true||||0");
  });

  test("an object that merely looks like a fragment is still escaped", () => {
    const fake = { value: "<script>" } as unknown as string;
    expect(html`${fake}`.value).toBe("[object Object]");
  });

  test("unsafeRaw marks trusted markup", () => {
    expect(unsafeRaw("<hr>")).toBeInstanceOf(SafeHtml);
    expect(html`${unsafeRaw("<hr>")}`.value).toBe("<hr>");
  });
});

describe("prettyJson", () => {
  test("indents JSON and leaves anything else unchanged", () => {
    expect(prettyJson('{"a":[1]}')).toBe('{\n  "a": [\n    1\n  ]\n}');
    expect(prettyJson("not json <b>")).toBe("not json <b>");
    expect(prettyJson("")).toBe("");
  });
});
