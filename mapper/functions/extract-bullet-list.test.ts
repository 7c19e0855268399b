/** `call.extract.bullet_list`: HTML and text lists, title guesses, nesting, and the mode fallback. */
import { describe, expect, test } from "bun:test";
import * as cheerio from "cheerio";
import fc from "fast-check";
import { extractBulletLists, listStartTag } from "./extract-bullet-list.ts";

const root = (html: string, text: string) => ({ message: { html, text } });

describe("call.extract.bullet_list", () => {
  const html =
    "<h2>Steps</h2><ul><li>One<ul><li>One.a</li></ul></li><li>Two</li></ul><p>Numbers</p><ol><li>First</li></ol>";
  test("extracts HTML lists with a title guessed from the preceding text", () => {
    expect(extractBulletLists({ html }, {})).toEqual([
      {
        title: "Steps",
        bullets: [
          { text: "One", child: null },
          { text: "One.a", child: null },
          { text: "Two", child: null },
        ],
      },
      { title: "Numbers", bullets: [{ text: "First", child: null }] },
    ]);
  });
  test.each([
    [
      "another list is skipped, not glued into a title",
      "<p>Shopping</p><ul><li>Milk <b>Whole</b></li><li>Eggs</li></ul><ol><li>one</li></ol>",
      ["Shopping", "Shopping"],
    ],
    ["block elements end lines", "<div><p>Intro</p><p>Items:</p></div><ul><li>a</li></ul>", ["Items:"]],
    ["<br> ends a line", "Hello<br>Pick one:<ul><li>a</li></ul>", ["Pick one:"]],
    ["a table cell's text", "<table><tr><td>Agenda</td></tr></table><ul><li>a</li></ul>", ["Agenda"]],
    [
      "style and script are not titles",
      "<style>.x{color:red}</style><script>x()</script><ul><li>a</li></ul>",
      [undefined],
    ],
  ])("title guess: %s", (_name, html, titles) => {
    expect(extractBulletLists({ html }, {}).map((l) => l.title)).toEqual(titles);
  });
  test("a bullet's text is its item's text without sub-lists (with numbered: false an <ol> stays text); comments are not text", () => {
    const doc = "<ul><li>One <!-- note --><b>bold</b><ol><li>sub</li></ol><ul><li>deep</li></ul></li></ul>";
    expect(extractBulletLists({ html: doc }, {})[0]?.bullets).toEqual([
      { text: "One bold", child: null },
      { text: "sub", child: null },
      { text: "deep", child: null },
    ]);
    expect(extractBulletLists({ html: doc, numbered: false }, {})[0]?.bullets).toEqual([
      { text: "One boldsub", child: null },
      { text: "deep", child: null },
    ]);
  });
  test("a list directly inside a list (no <li>) is a list of its own, after its parent", () => {
    const doc = "<ul><li>a</li><ul><li>b</li></ul></ul>";
    expect(extractBulletLists({ html: doc }, {}).map((l) => l.bullets.map((b) => b.text))).toEqual([
      ["a"],
      ["b"],
    ]);
  });
  test("nested lists become child lists titled by their bullet", () => {
    const [first] = extractBulletLists({ html, nested: true }, {});
    expect(first?.bullets[0]).toEqual({
      text: "One",
      child: { title: "One", bullets: [{ text: "One.a", child: null }] },
    });
  });
  test("numbered: false skips <ol> and numbered text lines", () => {
    expect(extractBulletLists({ html, numbered: false }, {})).toHaveLength(1);
    expect(extractBulletLists({ text: "1. a\n2. b", numbered: false }, {})).toEqual([]);
  });
  const text = "Shopping:\n- milk\n\n- eggs\n  - brown\nDone\n1) x\n2) y";
  test("text mode: sanitize (default) ignores blank lines inside a list", () => {
    expect(extractBulletLists({ text }, {})).toEqual([
      {
        title: "Shopping:",
        bullets: [
          { text: "milk", child: null },
          { text: "eggs", child: null },
          { text: "brown", child: null },
        ],
      },
      {
        title: "Done",
        bullets: [
          { text: "x", child: null },
          { text: "y", child: null },
        ],
      },
    ]);
  });
  test("text mode: sanitize false ends a list at a blank line", () => {
    expect(extractBulletLists({ text, sanitize: false }, {})[1]).toEqual({
      bullets: [
        { text: "eggs", child: null },
        { text: "brown", child: null },
      ],
    });
  });
  test("text mode: nested indentation builds child lists", () => {
    const lists = extractBulletLists({ text, nested: true }, {});
    expect(lists[0]?.bullets[1]).toEqual({
      text: "eggs",
      child: { title: "eggs", bullets: [{ text: "brown", child: null }] },
    });
  });
  test("HTML without lists falls back to message.text", () => {
    expect(extractBulletLists({}, root("<p>no lists</p>", "- a"))).toEqual([
      { bullets: [{ text: "a", child: null }] },
    ]);
  });
  test("list start tags are found in any ASCII case; a list only in a comment, script or attribute falls back", () => {
    const texts = (html: string, numbered = true) =>
      extractBulletLists({ html, text: "- from text", numbered }, {}).map((l) => l.bullets[0]?.text);
    expect(texts("<UL><LI>upper</LI></UL>")).toEqual(["upper"]);
    expect(texts("<Ol><li>mixed</li></oL>")).toEqual(["mixed"]);
    expect(texts("<ol><li>numbered</li></ol>", false)).toEqual(["from text"]);
    expect(texts('<!-- <ul><li>x</li></ul> --><script>"<ol>"</script><p title="<ul>">p</p>')).toEqual([
      "from text",
    ]);
    expect(texts("&lt;ul&gt;<li>not a list</li>")).toEqual(["from text"]);
  });
});

describe("listStartTag (HTML without one is not parsed)", () => {
  // Fragments that come close to a list start tag without spelling one, and markup that makes elements
  // by rules of its own (implied tags, foreign content, templates, raw text, character references).
  const fragment = fc.constantFrom(
    "<",
    "u",
    "U",
    "l",
    "L",
    "o",
    "O",
    ">",
    "/",
    " ",
    "\0",
    "<u>",
    "<li>",
    "<dl>",
    "<p>",
    "<table>",
    "<td>",
    "<select>",
    "<svg>",
    "<math>",
    "<template>",
    "<noscript>",
    "<plaintext>",
    "<!--",
    "-->",
    "<![CDATA[",
    "]]>",
    "&lt;",
    "&#60;",
    "&#x3c;",
    "ul",
    "ol",
    "</ul>",
    "</ol>",
  );
  const elementsOf = (html: string): string[] =>
    cheerio
      .load(html)("*")
      .toArray()
      .flatMap((el) => ("tagName" in el ? [el.tagName] : []));
  test("parse5 makes no ul or ol element from HTML that has no list start tag", () => {
    fc.assert(
      fc.property(fc.array(fragment, { maxLength: 12 }), (parts) => {
        const doc = parts.join("");
        const tags = elementsOf(doc);
        if (!listStartTag(true).test(doc)) expect(tags.filter((t) => t === "ul" || t === "ol")).toEqual([]);
        if (!listStartTag(false).test(doc)) expect(tags).not.toContain("ul");
      }),
      { numRuns: 3000 },
    );
  });
});
