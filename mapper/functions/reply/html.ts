/**
 * An HTML body as lines for the segmenter: its text, line by line as a mail client lays it out, each
 * line with the number of `<blockquote>`s around it, and the markup mail clients put around quoted
 * history (Gmail's `gmail_quote`, Outlook's reply divider, Thunderbird's `moz-cite-prefix`, Yahoo's
 * `yahoo_quoted`) and signatures (`gmail_signature`, Outlook's `Signature`) recorded on the first line
 * inside it. The tree comes from parse5 through cheerio (the HTML5 rules a mail client follows) and is
 * walked iteratively: mail HTML can nest thousands of levels deep.
 */
import * as cheerio from "cheerio";
import type { AnyNode, Element } from "domhandler";
import { isElement } from "../dom.ts";
import type { Boundary, Line } from "./lines.ts";

/** Elements that end the line before them and after them. */
const BLOCK = new Set([
  "address",
  "article",
  "aside",
  "blockquote",
  "center",
  "dd",
  "div",
  "dl",
  "dt",
  "fieldset",
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
  "thead",
  "tfoot",
  "tr",
  "ul",
]);
/** Elements whose text is never shown. */
const HIDDEN = new Set(["head", "script", "style", "title", "template", "noscript", "svg", "object"]);

/** The quote container an element opens, if it is one mail clients write. */
function boundaryOf(el: Element): Boundary | null {
  const cls = el.attribs.class ?? "";
  const id = el.attribs.id ?? "";
  if (/\bgmail_quote\b/.test(cls)) return { detector: "html.gmail_quote", vendor: "gmail" };
  if (/\byahoo_quoted\b/.test(cls) || id.startsWith("yahoo_quoted"))
    return { detector: "html.yahoo_quoted", vendor: "yahoo" };
  if (/\bmoz-cite-prefix\b/.test(cls)) return { detector: "html.moz_cite_prefix", vendor: "thunderbird" };
  if (/\bmoz-forward-container\b/.test(cls)) return { detector: "html.moz_forward", vendor: "thunderbird" };
  if (
    id === "divRplyFwdMsg" ||
    id === "appendonsend" ||
    id === "OLK_SRC_BODY_SECTION" ||
    id === "stopSpelling"
  )
    return { detector: "html.outlook_divider", vendor: "outlook" };
  if (id === "mail-editor-reference-message-container" || /\bOutlookMessageHeader\b/.test(cls))
    return { detector: "html.outlook_divider", vendor: "outlook" };
  const style = el.attribs.style ?? "";
  if (style.length < 2000 && /border-top:\s*solid\s+#(?:E1E1E1|B5C4DF)/i.test(style))
    return { detector: "html.outlook_divider", vendor: "outlook" };
  return null;
}

function isSignatureContainer(el: Element): boolean {
  const cls = el.attribs.class ?? "";
  const id = el.attribs.id ?? "";
  return /\b(?:gmail_signature|moz-signature)\b/.test(cls) || id === "Signature" || id === "signature";
}

const WS = /[ \t\n\r\f\u00a0]+/g;

/** The lines of an HTML body (see the module comment). */
export function htmlLines(html: string): Line[] {
  const root = cheerio.load(html).root()[0] as unknown as AnyNode & { children: AnyNode[] };
  const lines: Line[] = [];
  let current = "";
  let depth = 0;
  let pre = 0;
  let boundary: Boundary | null = null;
  let signature = false;
  const push = (text: string) => {
    const t = (pre > 0 ? text : text.replace(WS, " ")).trim();
    if (t === "") {
      // One blank line between blocks is enough: a run of empty divs is layout, not content.
      const last = lines[lines.length - 1];
      if (last !== undefined && last.text !== "")
        lines.push({ text: "", depth, start: -1, end: -1, boundary: null, signature: false });
      return;
    }
    lines.push({ text: t, depth, start: -1, end: -1, boundary: depth === 0 ? boundary : null, signature });
    boundary = null;
    signature = false;
  };
  const flush = () => {
    if (current !== "") push(current);
    current = "";
  };
  // The stack holds nodes to enter and, after an element's children, a marker to leave it.
  type Step = AnyNode | { leave: Element };
  const stack: Step[] = [];
  for (let i = root.children.length - 1; i >= 0; i--) stack.push(root.children[i] as AnyNode);
  while (stack.length > 0) {
    const step = stack.pop() as Step;
    if ("leave" in step) {
      const name = step.leave.tagName;
      if (BLOCK.has(name)) flush();
      if (name === "blockquote") depth--;
      if (name === "pre") pre--;
      if (name === "p") push("");
      continue;
    }
    const node = step;
    if (node.type === "text") {
      if (pre > 0) {
        const parts = node.data.split("\n");
        for (let k = 0; k < parts.length; k++) {
          if (k > 0) flush();
          current += parts[k];
        }
      } else current += node.data.replace(WS, " ");
      continue;
    }
    if (!isElement(node)) {
      if (node.type === "root" && "children" in node) {
        for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i] as AnyNode);
      }
      continue;
    }
    const name = node.tagName;
    if (HIDDEN.has(name)) continue;
    if (name === "br") {
      flush();
      continue;
    }
    if (BLOCK.has(name)) flush();
    if (name === "td" || name === "th") current += " ";
    const b = boundaryOf(node);
    if (b && boundary === null) boundary = b;
    if (isSignatureContainer(node)) signature = true;
    if (name === "blockquote") depth++;
    if (name === "pre") pre++;
    stack.push({ leave: node });
    for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i] as AnyNode);
  }
  flush();
  return lines;
}
