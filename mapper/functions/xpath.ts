/**
 * XPath 1.0 over the helpers' parsed HTML. The `xpath` engine needs a W3C DOM, so the document (already
 * parsed by parse5 and cleaned) is mirrored once into an @xmldom/xmldom XML document whose elements carry
 * their position in the original tree; matches are mapped back to the original elements, so CSS and
 * XPath selections project the same way.
 */
import { createRequire } from "node:module";
import render from "dom-serializer";
import type { AnyNode, Element, ParentNode } from "domhandler";
import { descendants } from "./dom.ts";

/**
 * The XPath engine and the XML parser are loaded on the first XPath selection, not with the mapper:
 * every mapper worker imports this module and few configs use XPath.
 */
const load = createRequire(import.meta.url);
let engine:
  | { select: Select; parse: (expr: string) => unknown; DOMParser: typeof import("@xmldom/xmldom").DOMParser }
  | undefined;
function xpathEngine() {
  if (engine === undefined) {
    const xpath = load("xpath") as { select: unknown; parse: (expr: string) => unknown };
    engine = {
      select: xpath.select as Select,
      parse: xpath.parse,
      DOMParser: (load("@xmldom/xmldom") as typeof import("@xmldom/xmldom")).DOMParser,
    };
  }
  return engine;
}

/** Why `expr` is not a valid XPath 1.0 expression, or null when it parses. */
export function xpathSyntaxError(expr: string): string | null {
  try {
    xpathEngine().parse(expr);
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** Attribute that carries an element's index into the mirror (removed from the original after use). */
const INDEX = "data-mailhook-xpath-index";

/** What the code reads of an xmldom node (the xpath typings expect the browser's Node). */
interface XmlNode {
  nodeType: number;
  getAttribute?(name: string): string | null;
}
type Select = (expr: string, node: unknown) => unknown;

interface Mirror {
  doc: XmlNode;
  elements: Element[];
  byElement: Map<Element, XmlNode>;
}

const mirrors = new WeakMap<ParentNode, Mirror>();

/** Attribute names XML accepts (anything else is dropped from the mirror, never from the original). */
const XML_NAME = /^[A-Za-z_][A-Za-z0-9._-]*$/;

function mirrorOf(root: ParentNode): Mirror {
  const hit = mirrors.get(root);
  if (hit !== undefined) return hit;
  const { select, DOMParser } = xpathEngine();
  const elements = [...descendants(root)];
  const saved = elements.map((el) => el.attribs);
  elements.forEach((el, i) => {
    const attribs: Record<string, string> = {};
    for (const [k, v] of Object.entries(el.attribs)) if (XML_NAME.test(k)) attribs[k] = v;
    attribs[INDEX] = String(i);
    el.attribs = attribs;
  });
  let xml: string;
  try {
    xml = render(root.children as AnyNode[], { xmlMode: true, decodeEntities: true, selfClosingTags: true });
  } finally {
    elements.forEach((el, i) => {
      el.attribs = saved[i] as Record<string, string>;
    });
  }
  // parse5 always builds one <html> element: the mirror is a well-formed XML document, and absolute
  // paths such as /html/body read as they do in a browser.
  const doc = new DOMParser({ onError: () => {} }).parseFromString(xml, "text/xml") as unknown as XmlNode;
  const byElement = new Map<Element, XmlNode>();
  const all = select(`//*[@${INDEX}]`, doc) as XmlNode[];
  for (const n of all) {
    const i = Number(n.getAttribute?.(INDEX));
    const el = elements[i];
    if (el !== undefined) byElement.set(el, n);
  }
  const mirror = { doc, elements, byElement };
  mirrors.set(root, mirror);
  return mirror;
}

function rootOf(node: ParentNode): ParentNode {
  let n: ParentNode = node;
  while (n.parent !== null) n = n.parent;
  return n;
}

/**
 * The elements `expr` selects with `context` as the context node (the document, or a container for a
 * relative field selector). An expression that yields a number, string or boolean is refused: use
 * `value: "count"` / `"exists"` instead.
 */
export function xpathSelect(expr: string, context: ParentNode): Element[] {
  const root = rootOf(context);
  const mirror = mirrorOf(root);
  const at = context === root ? mirror.doc : mirror.byElement.get(context as Element);
  if (at === undefined) return [];
  const result = xpathEngine().select(expr, at);
  if (!Array.isArray(result)) {
    throw new Error("extract.dom: an XPath selector must select element nodes (use value count or exists)");
  }
  const out: Element[] = [];
  for (const n of result as XmlNode[]) {
    if (n.nodeType !== 1) continue;
    const i = n.getAttribute?.(INDEX);
    const el = i === null || i === undefined ? undefined : mirror.elements[Number(i)];
    if (el !== undefined) out.push(el);
  }
  return out;
}
