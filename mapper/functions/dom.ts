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
