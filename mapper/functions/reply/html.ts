/**
 * An HTML body as lines for the segmenter: its text, line by line as a mail client lays it out, each
 * line with the number of `<blockquote>`s around it, and the markup mail clients put around quoted
 * history (Gmail's `gmail_quote`, Outlook's reply divider, Thunderbird's `moz-cite-prefix`, Yahoo's
 * `yahoo_quoted`) and signatures (`gmail_signature`, Outlook's `Signature`) recorded on the first line
 * inside it.
 *
 * Read with htmlparser2's streaming parser, no tree built: only block boundaries, quotes and a few
 * classes matter here, and the analysis runs on every message. parse5 (which the other helpers use for
 * its HTML5 recovery rules) took 260 ms to build the tree of a 1 MB spam body; the stream reads it in a
 * fraction of that, in constant stack depth however deeply the markup nests.
 */
import { Parser } from "htmlparser2";
import { type Boundary, type Line, MAX_LINES } from "./lines.ts";

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

type Attribs = Readonly<Record<string, string>>;

/** The quote container an element opens, if it is one mail clients write. */
function boundaryOf(attribs: Attribs): Boundary | null {
  const cls = attribs.class;
  const id = attribs.id;
  const style = attribs.style;
  // Most elements carry none of the three; `includes` before any pattern keeps the common case cheap.
  if (cls !== undefined && cls !== "") {
    if (cls.includes("gmail_quote")) return { detector: "html.gmail_quote", vendor: "gmail" };
    if (cls.includes("yahoo_quoted")) return { detector: "html.yahoo_quoted", vendor: "yahoo" };
    if (cls.includes("moz-cite-prefix")) return { detector: "html.moz_cite_prefix", vendor: "thunderbird" };
    if (cls.includes("moz-forward-container")) return { detector: "html.moz_forward", vendor: "thunderbird" };
    if (cls.includes("OutlookMessageHeader")) return { detector: "html.outlook_divider", vendor: "outlook" };
  }
  if (id !== undefined && id !== "") {
    if (OUTLOOK_IDS.has(id)) return { detector: "html.outlook_divider", vendor: "outlook" };
    if (id.startsWith("yahoo_quoted")) return { detector: "html.yahoo_quoted", vendor: "yahoo" };
  }
  if (
    style !== undefined &&
    style.length < 2000 &&
    style.includes("border-top") &&
    OUTLOOK_RULE_STYLE.test(style)
  )
    return { detector: "html.outlook_divider", vendor: "outlook" };
  return null;
}

/** Ids Outlook gives the block above quoted history (desktop, web, Mac, the new Outlook). */
const OUTLOOK_IDS = new Set([
  "divRplyFwdMsg",
  "appendonsend",
  "OLK_SRC_BODY_SECTION",
  "stopSpelling",
  "mail-editor-reference-message-container",
]);
/** Outlook desktop's divider: a top border in one of its two greys. */
const OUTLOOK_RULE_STYLE = /border-top:\s*solid\s+#(?:E1E1E1|B5C4DF)/i;

function isSignatureContainer(attribs: Attribs): boolean {
  const cls = attribs.class;
  const id = attribs.id;
  if (cls !== undefined && (cls.includes("gmail_signature") || cls.includes("moz-signature"))) return true;
  return id === "Signature" || id === "signature";
}

const WS = /[ \t\n\r\f\u00a0]+/g;

/** What an open element changes, undone when it closes. */
const BLOCKQUOTE = 1;
const PRE = 2;
const HIDE = 4;
const BLOCK_FLAG = 8;
const PARAGRAPH = 16;

/** The lines of an HTML body (see the module comment). */
export function htmlLines(html: string): Line[] {
  const lines: Line[] = [];
  let current = "";
  let depth = 0;
  let pre = 0;
  let hidden = 0;
  let boundary: Boundary | null = null;
  let signature = false;
  const open: number[] = [];
  const push = (text: string) => {
    const t = pre > 0 ? text.trimEnd() : text.replace(WS, " ").trim();
    if (t === "") {
      // One blank line between blocks is enough: a run of empty divs is layout, not content.
      const last = lines[lines.length - 1];
      if (last !== undefined && last.text !== "" && lines.length < MAX_LINES)
        lines.push({ text: "", depth, start: -1, end: -1, boundary: null, signature: false });
      return;
    }
    const last = lines[lines.length - 1];
    if (lines.length >= MAX_LINES && last !== undefined) {
      // Past MAX_LINES the rest joins the last line (see textLines).
      last.text += `\n${t}`;
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
  const parser = new Parser(
    {
      onopentag(name, attribs) {
        let flags = 0;
        if (HIDDEN.has(name)) flags |= HIDE;
        if (hidden === 0 && (flags & HIDE) === 0) {
          if (name === "br") flush();
          if (BLOCK.has(name)) {
            flush();
            flags |= BLOCK_FLAG;
          }
          if (name === "td" || name === "th") current += " ";
          const b = boundaryOf(attribs);
          if (b && boundary === null) boundary = b;
          if (isSignatureContainer(attribs)) signature = true;
          if (name === "blockquote") flags |= BLOCKQUOTE;
          if (name === "pre") flags |= PRE;
          if (name === "p") flags |= PARAGRAPH;
        }
        if (flags & HIDE) hidden++;
        if (flags & BLOCKQUOTE) depth++;
        if (flags & PRE) pre++;
        open.push(flags);
      },
      ontext(data) {
        if (hidden > 0) return;
        if (pre > 0) {
          const parts = data.split("\n");
          for (let k = 0; k < parts.length; k++) {
            if (k > 0) flush();
            current += parts[k];
          }
        } else current += data;
      },
      onclosetag() {
        const flags = open.pop() ?? 0;
        if (flags & BLOCK_FLAG) flush();
        if (flags & HIDE) hidden--;
        if (flags & BLOCKQUOTE) depth--;
        if (flags & PRE) pre--;
        if (flags & PARAGRAPH) push("");
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.end(html);
  flush();
  return lines;
}
