/** Walks over the parse5 trees (domhandler nodes, through cheerio) the HTML helpers read. */
import type { AnyNode, Element, ParentNode } from "domhandler";

export const isElement = (n: AnyNode): n is Element =>
  n.type === "tag" || n.type === "script" || n.type === "style";

/** The elements below `node`, children before siblings (document order), iteratively. */
export function* descendants(node: ParentNode): Generator<Element> {
  const stack: AnyNode[] = [];
  for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i] as AnyNode);
  while (stack.length > 0) {
    const n = stack.pop() as AnyNode;
    if (!isElement(n)) continue;
    yield n;
    for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i] as AnyNode);
  }
}

const NOTHING: ReadonlySet<string> = new Set();

/**
 * `el`'s text content (every text node below it, as the DOM's `textContent`), leaving out the elements
 * named in `skip`, read up to `limit` characters. Iterative: mail HTML can nest deeply.
 */
export function textContent(el: Element, skip = NOTHING, limit = Number.POSITIVE_INFINITY): string {
  let out = "";
  const stack: AnyNode[] = [];
  for (let i = el.children.length - 1; i >= 0; i--) stack.push(el.children[i] as AnyNode);
  while (stack.length > 0 && out.length < limit) {
    const n = stack.pop() as AnyNode;
    if (n.type === "text") out += n.data;
    else if (n.type !== "comment" && "children" in n) {
      if (isElement(n) && skip.has(n.tagName)) continue;
      for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i] as AnyNode);
    }
  }
  return out.length > limit ? out.slice(0, limit) : out;
}

/** Content a reader never sees: dropped before the structured helpers look at a document. */
export const HIDDEN_TAGS: ReadonlySet<string> = new Set([
  "head",
  "script",
  "style",
  "noscript",
  "template",
  "title",
  "meta",
  "link",
]);

const HIDDEN_STYLE = /(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\s*(?:!important)?\s*(?:;|$)/i;

/** True for an element a mail client does not show: hidden tags, `hidden`, `aria-hidden`, `display:none`. */
export function isHidden(el: Element): boolean {
  if (HIDDEN_TAGS.has(el.tagName)) return true;
  const a = el.attribs;
  if (a.hidden !== undefined) return true;
  if (a["aria-hidden"] === "true") return true;
  return a.style !== undefined && HIDDEN_STYLE.test(a.style);
}

/** Elements that end a line of text (as a renderer lays them out). */
export const BLOCK_TAGS: ReadonlySet<string> = new Set([
  "address",
  "article",
  "aside",
  "blockquote",
  "br",
  "caption",
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
  "tbody",
  "td",
  "tfoot",
  "th",
  "thead",
  "tr",
  "ul",
]);

/**
 * The visible text of `node` with a line break at each block boundary and `<br>` (hidden content left
 * out): the lines a reader sees, for line-based extraction. Iterative.
 */
export function visibleLines(node: ParentNode): string {
  const parts: string[] = [];
  const stack: (AnyNode | "\n")[] = [];
  for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i] as AnyNode);
  while (stack.length > 0) {
    const n = stack.pop() as AnyNode | "\n";
    if (n === "\n") {
      parts.push("\n");
      continue;
    }
    if (n.type === "text") parts.push(n.data.replace(/\s+/g, " "));
    else if (isElement(n)) {
      if (isHidden(n)) continue;
      const block = BLOCK_TAGS.has(n.tagName);
      if (block) {
        parts.push("\n");
        stack.push("\n");
      } else if (n.tagName === "td" || n.tagName === "th") parts.push(" ");
      for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i] as AnyNode);
    } else if (n.type !== "comment" && "children" in n) {
      for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i] as AnyNode);
    }
  }
  return parts.join("");
}

/** `s` with whitespace runs collapsed to one space, trimmed. */
export const collapse = (s: string): string => s.replace(/\s+/g, " ").trim();

/** Visible text content of `el` (hidden descendants left out), whitespace collapsed. */
export function visibleText(el: Element, limit = Number.POSITIVE_INFINITY): string {
  let out = "";
  const stack: AnyNode[] = [];
  for (let i = el.children.length - 1; i >= 0; i--) stack.push(el.children[i] as AnyNode);
  while (stack.length > 0 && out.length < limit) {
    const n = stack.pop() as AnyNode;
    if (n.type === "text") out += n.data;
    else if (isElement(n)) {
      if (isHidden(n)) continue;
      if (n.tagName === "br" || BLOCK_TAGS.has(n.tagName)) out += " ";
      for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i] as AnyNode);
    } else if (n.type !== "comment" && "children" in n) {
      for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i] as AnyNode);
    }
  }
  return collapse(out);
}

/**
 * The elements below `node` in document order, each with its nearest ancestor whose tag is in `tags`
 * (null when there is none) — one pass, whatever the nesting, where walking up from each element would
 * cost its depth. Iterative.
 */
export function* descendantsWithin(
  node: ParentNode,
  tags: ReadonlySet<string>,
): Generator<[Element, Element | null]> {
  const stack: [AnyNode, Element | null][] = [];
  for (let i = node.children.length - 1; i >= 0; i--) stack.push([node.children[i] as AnyNode, null]);
  while (stack.length > 0) {
    const [n, within] = stack.pop() as [AnyNode, Element | null];
    if (!isElement(n)) continue;
    yield [n, within];
    const inner = tags.has(n.tagName) ? n : within;
    for (let i = n.children.length - 1; i >= 0; i--) stack.push([n.children[i] as AnyNode, inner]);
  }
}
