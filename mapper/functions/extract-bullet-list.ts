/** `call.extract.bullet_list`: bulleted/numbered lists of an HTML or text body (spec "call.extract.bullet_list"). */
import * as cheerio from "cheerio";
import type { AnyNode, Element, ParentNode } from "domhandler";
import { descendants, isElement, textContent } from "./dom.ts";
import { boolArg, helperInput, registerFunction, selectMode } from "./registry.ts";

export interface BulletList {
  title?: string;
  bullets: Bullet[];
}
export interface Bullet {
  text: string;
  child: BulletList | null;
}
interface Options {
  nested: boolean;
  sanitize: boolean;
  numbered: boolean;
}

const collapse = (s: string) => s.replace(/\s+/g, " ").trim();
const MAX_TITLE = 200;
/** Previous siblings looked at per level when guessing a list's title. */
const MAX_TITLE_SIBLINGS = 50;

function lastLine(s: string): string {
  const lines = s
    .split(/\r?\n/)
    .map(collapse)
    .filter((l) => l !== "");
  return (lines.at(-1) ?? "").slice(0, MAX_TITLE);
}

function withTitle(title: string | undefined, bullets: Bullet[]): BulletList {
  return title ? { title, bullets } : { bullets };
}

// ---------- HTML ----------

const LISTS = new Set(["ul", "ol"]);
/** Elements whose content is never a title. */
const HIDDEN = new Set(["script", "style", "template", "head", "title", "noscript"]);
/** Elements that start and end a line of text. */
const BLOCKS = new Set([
  "address",
  "article",
  "aside",
  "blockquote",
  "br",
  "dd",
  "div",
  "dl",
  "dt",
  "fieldset",
  "figcaption",
  "figure",
  "footer",
  "form",
  "h1",
  "h2",
  "h3",
  "h4",
  "h5",
  "h6",
  "header",
  "hr",
  "li",
  "main",
  "nav",
  "ol",
  "p",
  "pre",
  "section",
  "table",
  "td",
  "th",
  "tr",
  "ul",
]);

/** The text of `node` with a line break around every block element (iterative: HTML can nest deeply). */
function linesOf(node: AnyNode): string {
  let out = "";
  const stack: (AnyNode | "\n")[] = [node];
  while (stack.length > 0) {
    const n = stack.pop() as AnyNode | "\n";
    if (n === "\n") {
      out += "\n";
      continue;
    }
    if (n.type === "text") out += (n as unknown as { data: string }).data;
    else if (n.type === "tag" || n.type === "script" || n.type === "style") {
      const el = n as Element;
      if (HIDDEN.has(el.tagName)) continue;
      const block = BLOCKS.has(el.tagName);
      if (block) {
        out += "\n";
        stack.push("\n");
      }
      for (let i = el.children.length - 1; i >= 0; i--) stack.push(el.children[i] as AnyNode);
    }
  }
  return out;
}

/**
 * A start tag of a list (`<ul`, and `<ol` when numbered lists count), ASCII case-insensitive as the HTML
 * tokenizer folds tag names. A `ul` or `ol` element comes only from a start tag spelling its name (no
 * parser rule implies one, and a character reference never makes markup), so HTML that matches neither
 * has no list, whatever else it holds. Exported for tests.
 */
export const listStartTag = (numbered: boolean): RegExp => (numbered ? /<[uo]l/i : /<ul/i);

/**
 * Lists of an HTML body. The tree comes from parse5 (through cheerio, the HTML5 rules a mail client's
 * renderer follows) and is then walked directly: cheerio's selector, `.parents()` and clone-per-bullet
 * took 115 of 176 ms on 1 MB of list-heavy HTML (over the 100 ms call budget). What is left is mostly the
 * parse itself (about 45 ms for 1 MB of list-heavy HTML) and reading the text parse5 built a character
 * at a time (about 15 ms); the walk is a few ms. HTML without a list start tag is not parsed at all:
 * most mail has no list, and the parse would find none.
 */
function fromHtml(html: string, o: Options): BulletList[] {
  if (!listStartTag(o.numbered).test(html)) return [];
  const root = cheerio.load(html).root()[0] as unknown as ParentNode;
  const listTags: ReadonlySet<string> = o.numbered ? LISTS : new Set(["ul"]);
  /**
   * Guesses a title from the nearest text before `el`: previous siblings, then the parent's. Another list
   * is not a title (it is skipped, so two lists under one heading share it), and block elements and
   * `<br>` end lines, so `<p>Intro</p><p>Items:</p>` ends with the line "Items:", not "IntroItems:".
   */
  const titles = new Map<Element, string | undefined>();
  const guessTitle = (el: Element): string | undefined => {
    let node: AnyNode | null = el;
    for (let level = 0; node && level < 4; level++) {
      let looked = 0;
      for (let prev: AnyNode | null = node.prev; prev; prev = prev.prev) {
        // A bounded look back: thousands of blank siblings must not make every list scan all of them.
        if (++looked > MAX_TITLE_SIBLINGS) break;
        if (prev.type === "tag" && LISTS.has((prev as Element).tagName)) {
          // A list sharing this one's place already walked on from here: its guess is this one's (lists
          // are guessed in document order). Without this each list walked back over every earlier one.
          if (level === 0 && titles.has(prev as Element)) return titles.get(prev as Element);
          continue;
        }
        const t = lastLine(linesOf(prev));
        if (t !== "") return t;
      }
      const parent: AnyNode | null = node.parent;
      if (parent?.type !== "tag" || ["body", "html", "li"].includes((parent as Element).tagName)) break;
      node = parent;
    }
    return undefined;
  };

  const bulletsOf = (list: Element): Bullet[] => {
    const out: Bullet[] = [];
    for (const li of list.children) {
      if (!isElement(li) || li.tagName !== "li") continue;
      const text = collapse(textContent(li, listTags));
      const subs = li.children.filter((c): c is Element => isElement(c) && listTags.has(c.tagName));
      if (o.nested) {
        const first = subs[0];
        const child = first ? withTitle(text, bulletsOf(first)) : null;
        if (text !== "" || child) out.push({ text, child });
      } else {
        if (text !== "") out.push({ text, child: null });
        // Without nesting, sub-items are flattened in document order rather than dropped.
        for (const sub of subs) out.push(...bulletsOf(sub));
      }
    }
    return out;
  };

  const insideItem = (el: Element): boolean => {
    for (let p = el.parent; p !== null; p = p.parent) if (isElement(p) && p.tagName === "li") return true;
    return false;
  };
  const lists: BulletList[] = [];
  for (const list of descendants(root)) {
    if (!listTags.has(list.tagName) || insideItem(list)) continue; // a nested list is reached through its parent
    const bullets = bulletsOf(list);
    const title = guessTitle(list);
    titles.set(list, title);
    if (bullets.length > 0) lists.push(withTitle(title, bullets));
  }
  return lists;
}

// ---------- text ----------

const BULLET = /^([ \t]*)([-*•+·–▪◦])[ \t]+(\S.*)$/;
const NUMBERED = /^([ \t]*)(\d{1,3}[.)])[ \t]+(\S.*)$/;
const indentOf = (s: string) => s.replace(/\t/g, "    ").length;

function fromText(text: string, o: Options): BulletList[] {
  const lists: BulletList[] = [];
  let stack: { indent: number; list: BulletList }[] = [];
  let lastText: string | undefined;
  for (const raw of text.split(/\r?\n/)) {
    const m = BULLET.exec(raw) ?? (o.numbered ? NUMBERED.exec(raw) : null);
    if (m === null) {
      const line = collapse(raw);
      if (line === "") {
        if (!o.sanitize) stack = []; // a blank line ends the list unless blank lines are sanitised away
        continue;
      }
      stack = [];
      lastText = line.slice(0, MAX_TITLE);
      continue;
    }
    const indent = indentOf(m[1] ?? "");
    const bullet: Bullet = { text: collapse(m[3] ?? ""), child: null };
    while (stack.length > 1 && indent < stack.at(-1)!.indent) stack.pop();
    const top = stack.at(-1);
    if (top === undefined) {
      const list = withTitle(lastText, [bullet]);
      lists.push(list);
      stack = [{ indent, list }];
      lastText = undefined;
    } else if (indent > top.indent && o.nested) {
      const parent = top.list.bullets.at(-1)!;
      parent.child ??= withTitle(parent.text, []);
      parent.child.bullets.push(bullet);
      stack.push({ indent, list: parent.child });
    } else top.list.bullets.push(bullet);
  }
  return lists;
}

/** Runs the spec's mode selection; HTML mode with zero lists falls back to text. Exported for tests. */
export function extractBulletLists(args: Readonly<Record<string, unknown>>, root: unknown): BulletList[] {
  const o: Options = {
    nested: boolArg(args.nested, false),
    sanitize: boolArg(args.sanitize, true),
    numbered: boolArg(args.numbered, true),
  };
  const html = helperInput(args, root, "html");
  const text = helperInput(args, root, "text");
  if (selectMode(args) === "text") return fromText(text, o);
  let lists: BulletList[] = [];
  try {
    lists = fromHtml(html, o);
  } catch {
    lists = [];
  }
  return lists.length > 0 ? lists : fromText(text, o);
}

registerFunction("extract.bullet_list", {
  description: "Extracts bulleted and numbered lists as [{title?, bullets: [{text, child}]}].",
  args: {
    mode: { type: "string", enum: ["html", "text"], description: "html (default) or text" },
    html: { type: "string", description: "HTML to scan (default message.html)" },
    text: { type: "string", description: "text to scan (default message.text)" },
    nested: { type: "boolean", description: "nest sub-lists as bullet.child (default false: flatten)" },
    sanitize: { type: "boolean", description: "text mode: ignore empty lines inside a list (default true)" },
    numbered: { type: "boolean", description: "include numbered lists (<ol>, 1., 1)) (default true)" },
  },
  run: extractBulletLists,
});
