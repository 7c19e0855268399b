import { describe, expect, test } from "bun:test";
import * as cheerio from "cheerio";
import fc from "fast-check";
import { evaluateExpression } from "../index.ts";
import { extractUrls, SKIP, URL_ATTRIBUTES } from "./extract-urls.ts";
import { helperInput, MAX_HELPER_INPUT_CHARS } from "./registry.ts";

/**
 * The extraction this module used before it walked the tree itself (cheerio's selector and `.text()` on the
 * same parse5 tree), kept as the reference for what "the element's text" and document order mean.
 */
function reference(html: string) {
  const $ = cheerio.load(html);
  const collapse = (s: string) => s.replace(/\s+/g, " ").trim();
  const out: { url: string; title?: string; element: string }[] = [];
  $(Object.keys(URL_ATTRIBUTES).join(",")).each((_, el) => {
    const node = $(el);
    const element = (el as { tagName: string }).tagName.toLowerCase();
    const title =
      collapse(node.text()) || collapse(node.attr("alt") ?? "") || collapse(node.attr("title") ?? "");
    for (const attr of URL_ATTRIBUTES[element] ?? []) {
      let url = (node.attr(attr) ?? "").trim();
      if (attr === "srcset") url = url.split(",")[0]?.trim().split(/\s+/)[0] ?? "";
      if (url === "" || SKIP.test(url)) continue;
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
 * HTML as mail has it, well-formed or not: unclosed and misnested tags, <p>s and table cells closed by the
 * next one, forms in forms, <a> in <a>, comments (also ended by `--!>`), iframes, noscript.
 */
const html = fc.letrec<{ node: string }>((tie) => ({
  node: fc.oneof(
    { depthSize: "small" },
    text,
    voids,
    fc.constantFrom(
      "<!-- c -->",
      "<!-- x --!>",
      "<!--[if mso]><p>mso</p><![endif]-->",
      "</a>",
      "</p>",
      "<p>",
      "<li>",
      "<td>",
    ),
    fc
      .tuple(
        fc.constantFrom(
          "a",
          "form",
          "button",
          "iframe",
          "b",
          "p",
          "div",
          "span",
          "table",
          "td",
          "li",
          "ul",
          "noscript",
          "font",
        ),
        fc.constantFrom("href", "src", "action", "formaction"),
        url,
        fc.array(tie("node"), { maxLength: 3 }),
        fc.boolean(),
      )
      .map(([t, attr, u, kids, closed]) => `<${t} ${attr}="${u}">${kids.join("")}${closed ? `</${t}>` : ""}`),
  ),
})).node;

describe("extractUrls (HTML: the parse5 tree, walked directly)", () => {
  test("gives the selector-based extraction's result on any HTML (both read parse5's tree)", () => {
    fc.assert(
      fc.property(fc.array(html, { maxLength: 4 }), (parts) => {
        const doc = parts.join("");
        expect(extractUrls({ mode: "html", html: doc }, {})).toEqual(reference(doc));
      }),
      { numRuns: 2000 },
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

  test.each([
    [
      "a <p> closes at the next <p>",
      '<p><a href="https://shop/item">View item<p>Price: $10',
      [
        { url: "https://shop/item", title: "View item", element: "a" },
        { url: "https://shop/item", title: "Price: $10", element: "a" },
      ],
    ],
    [
      "a misnested <a> is rebuilt after the inline element closes",
      '<span><a href="https://x/">Click</span> here</a>',
      [
        { url: "https://x/", title: "Click", element: "a" },
        { url: "https://x/", title: "here", element: "a" },
      ],
    ],
    [
      "a comment ended by --!> ends there",
      '<!-- x --!><a href="https://c/">C3</a>',
      [{ url: "https://c/", title: "C3", element: "a" }],
    ],
    [
      "a form inside a form is ignored",
      '<form action="https://a/"><form action="https://b/">x</form></form>',
      [{ url: "https://a/", title: "x", element: "form" }],
    ],
  ])("HTML5 tree rules, as a mail client renders: %s", (_name, doc, expected) => {
    expect(extractUrls({ mode: "html", html: doc }, {})).toEqual(expected);
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

  test("the cut never splits a surrogate pair", () => {
    const text = `${"x".repeat(MAX_HELPER_INPUT_CHARS - 1)}😀 https://after.example/`;
    expect(helperInput({ text }, {}, "text")).toBe("x".repeat(MAX_HELPER_INPUT_CHARS - 1));
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

const root = (html: string, text: string) => ({ message: { html, text } });

describe("call.extract.urls", () => {
  const html =
    '<a href="https://a.test/x">A link</a><img src="https://i.test/p.png" alt="pic"><a href="#top">t</a><form action="/post"></form><a href="https://a.test/x">A link</a>';
  test("extracts href/src of the listed elements with title and element", () => {
    expect(extractUrls({ html }, {})).toEqual([
      { url: "https://a.test/x", title: "A link", element: "a" },
      { url: "https://i.test/p.png", title: "pic", element: "img" },
      { url: "/post", element: "form" },
      { url: "https://a.test/x", title: "A link", element: "a" },
    ]);
  });
  test("deduplicate drops repeated (url, title, element)", () => {
    expect(extractUrls({ html, deduplicate: true }, {})).toHaveLength(3);
  });
  test("text mode finds bare URLs and Markdown links with titles", () => {
    expect(extractUrls({ text: "See [docs](https://d.test/a) and https://b.test/p?q=1." }, {})).toEqual([
      { url: "https://d.test/a", title: "docs" },
      { url: "https://b.test/p?q=1" },
    ]);
  });
  const modes: [string, Record<string, unknown>, unknown, string[]][] = [
    [
      "only text given → text mode",
      { text: "https://t.test/1" },
      root('<a href="https://h.test/">h</a>', ""),
      ["https://t.test/1"],
    ],
    [
      "no args → message.html",
      {},
      root('<a href="https://h.test/">h</a>', "https://t.test/"),
      ["https://h.test/"],
    ],
    [
      "html with no links falls back to message.text",
      {},
      root("<p>none</p>", "https://t.test/"),
      ["https://t.test/"],
    ],
    ["explicit html mode does not fall back", { mode: "html" }, root("<p>none</p>", "https://t.test/"), []],
    [
      "explicit text mode ignores html",
      { mode: "text", html: '<a href="https://h.test/">h</a>' },
      root("", "https://t.test/"),
      ["https://t.test/"],
    ],
    [
      "an invalid mode falls back to auto",
      { mode: "pdf" },
      root("<p/>", "https://t.test/"),
      ["https://t.test/"],
    ],
  ];
  test.each(modes)("%s", (_n, args, r, urls) => {
    expect(extractUrls(args, r).map((u) => u.url)).toEqual(urls);
  });
  test("works through both call forms", () => {
    const r = root("", "https://x.test/");
    expect(evaluateExpression({ "call.extract.urls": {} }, r)).toEqual(
      evaluateExpression({ call: { fn: "extract.urls" } }, r),
    );
  });
});
