import { describe, expect, test } from "bun:test";
import * as cheerio from "cheerio";
import fc from "fast-check";
import { extractUrls } from "./extract-urls.ts";
import { MAX_HELPER_INPUT_CHARS } from "./registry.ts";

/**
 * The DOM-based extraction this module used before its streaming pass (cheerio: an HTML5 tree, then a
 * selector), kept as the reference for what "the element's text" and document order mean.
 */
const ATTRS: Record<string, string[]> = {
  a: ["href"],
  area: ["href"],
  img: ["src"],
  link: ["href"],
  form: ["action"],
  button: ["formaction"],
  input: ["src", "formaction"],
  script: ["src"],
  iframe: ["src"],
  source: ["src", "srcset"],
};
function reference(html: string) {
  const $ = cheerio.load(html);
  const collapse = (s: string) => s.replace(/\s+/g, " ").trim();
  const out: { url: string; title?: string; element: string }[] = [];
  $(Object.keys(ATTRS).join(",")).each((_, el) => {
    const node = $(el);
    const element = (el as { tagName: string }).tagName.toLowerCase();
    const title =
      collapse(node.text()) || collapse(node.attr("alt") ?? "") || collapse(node.attr("title") ?? "");
    for (const attr of ATTRS[element] ?? []) {
      let url = (node.attr(attr) ?? "").trim();
      if (attr === "srcset") url = url.split(",")[0]?.trim().split(/\s+/)[0] ?? "";
      if (url === "" || /^(?:#|javascript:|data:|about:|cid:)/i.test(url)) continue;
      out.push(title === "" ? { url, element } : { url, title, element });
    }
  });
  return out;
}

const text = fc.constantFrom("hi", " ", "A &amp; B", "x\ny", "", "é", "&lt;b&gt;");
const url = fc.constantFrom(
  "https://a.example/x",
  "#top",
  "cid:x",
  " http://b.example ",
  "",
  "mailto:q@x",
  "https://c.example/1 1x, https://c.example/2 2x",
);
const voids = fc
  .tuple(
    fc.constantFrom("img", "input", "source", "link", "area", "br"),
    fc.constantFrom("src", "href", "srcset", "formaction"),
    url,
    fc.constantFrom("", ' alt="pic"', ' title="T"', ' alt="" title="T"'),
  )
  .map(([t, attr, u, extra]) => `<${t} ${attr}="${u}"${extra}>`);
/**
 * Well-nested HTML: no <a> in an <a>, no form control or form inside a <button> or <form>, no <p> or
 * table. On those an HTML5 tree builder (which moves or closes elements) and a streaming parser differ.
 */
const html = fc.letrec<{ any: string; inA: string; inForm: string }>((tie) => {
  const element = (tags: string[], child: "any" | "inA" | "inForm") =>
    fc
      .tuple(
        fc.constantFrom(...tags),
        fc.constantFrom("href", "src", "action", "formaction"),
        url,
        fc.array(tie(child), { maxLength: 3 }),
      )
      .map(([t, attr, u, kids]) => `<${t} ${attr}="${u}">${kids.join("")}</${t}>`);
  // Inline and neutral containers only: <p> and tables reorder or close content (HTML5 tree rules).
  const plain = ["b", "em", "div", "span"];
  return {
    any: fc.oneof(
      { depthSize: "small" },
      text,
      voids,
      element(["a"], "inA"),
      element(["form", "button"], "inForm"),
      element(["iframe", ...plain], "any"),
    ),
    inA: fc.oneof({ depthSize: "small" }, text, voids, element(plain, "inA")),
    inForm: fc.oneof(
      { depthSize: "small" },
      text,
      fc.constantFrom('<img src="https://i.example/p" alt="pic">', '<a href="https://a.example/in">in</a>'),
      element(plain, "inForm"),
    ),
  };
}).any;

describe("extractUrls (HTML, one streaming pass)", () => {
  test("gives the DOM-based extraction's result on well-nested HTML", () => {
    fc.assert(
      fc.property(fc.array(html, { maxLength: 4 }), (parts) => {
        const doc = parts.join("");
        expect(extractUrls({ mode: "html", html: doc }, {})).toEqual(reference(doc));
      }),
      { numRuns: 1500 },
    );
  });

  test("an <iframe>'s content is raw text: nothing inside is extracted", () => {
    const doc =
      '<a href="https://a.example/">go <iframe src="https://f.example/"><img src="https://no/"></iframe></a>';
    expect(extractUrls({ mode: "html", html: doc }, {})).toEqual([
      { url: "https://a.example/", title: 'go <img src="https://no/">', element: "a" },
      { url: "https://f.example/", title: '<img src="https://no/">', element: "iframe" },
    ]);
  });

  test("an <a> inside an open <a> ends the first one", () => {
    const doc = '<a href="https://one/">one <a href="https://two/">two</a> after</a>';
    expect(extractUrls({ mode: "html", html: doc }, {})).toEqual([
      { url: "https://one/", title: "one", element: "a" },
      { url: "https://two/", title: "two", element: "a" },
    ]);
  });

  test("an unclosed element's title stops growing at 64 KiB of text", () => {
    const doc = `<a href="https://a.example/">${"word ".repeat(40_000)}`;
    const [first] = extractUrls({ mode: "html", html: doc }, {});
    expect(first?.url).toBe("https://a.example/");
    expect(first?.title?.length).toBeLessThanOrEqual(64 * 1024);
    expect(first?.title?.length).toBeGreaterThan(60_000);
  });

  test("reads the first MAX_HELPER_INPUT_CHARS characters of a longer body (the call budget is 100 ms)", () => {
    const link = (n: number) => `<a href="https://a.example/${n}">${n}</a>`;
    const filler = "x".repeat(MAX_HELPER_INPUT_CHARS - link(1).length);
    const doc = `${link(1)}${filler}${link(2)}`;
    expect(extractUrls({ mode: "html", html: doc }, {}).map((u) => u.url)).toEqual(["https://a.example/1"]);
    const root = { message: { html: doc, text: "" } };
    expect(extractUrls({}, root).map((u) => u.url)).toEqual(["https://a.example/1"]);
  });

  test("text mode is linear: bare URLs inside Markdown links are skipped with one pointer", () => {
    const text = "[docs](https://docs.example/a) https://bare.example/b [x](https://x.example/c)".repeat(3);
    expect(extractUrls({ mode: "text", text }, {}).map((u) => u.url)).toEqual(
      Array.from({ length: 3 }, () => [
        "https://docs.example/a",
        "https://bare.example/b",
        "https://x.example/c",
      ]).flat(),
    );
  });
});
