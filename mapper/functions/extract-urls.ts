/** `call.extract.urls`: links of an HTML or plain-text body (spec "call.extract.urls"). */
import { Parser } from "htmlparser2";
import { boolArg, helperInput, registerFunction, selectMode } from "./registry.ts";

export interface ExtractedUrl {
  url: string;
  title?: string;
  element?: string;
}

/** Element → attributes that carry a URL, per the spec's element list. */
const URL_ATTRIBUTES: Record<string, readonly string[]> = {
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
/** Not links a receiver can follow. */
const SKIP = /^(?:#|javascript:|data:|about:|cid:)/i;

const collapse = (s: string) => s.replace(/\s+/g, " ").trim();

/** Longest element text kept as a title candidate (an unclosed `<a>` would otherwise collect the rest of the page). */
const MAX_TITLE_SOURCE = 64 * 1024;

/** One URL-carrying element, from its opening tag to its end. */
interface Found {
  element: string;
  urls: string[];
  alt: string;
  title: string;
  text: string;
}

/**
 * One streaming pass of htmlparser2 (no DOM): an element's URLs are read from its opening tag and its
 * title (text content, else `alt`, else `title`) is complete at its closing tag; results keep document
 * order. It replaced cheerio's DOM and selector engine, which took 115 ms on 1 MB of link-dense HTML
 * (over the 100 ms call budget); this takes about a fifth of that (tools/bench/mapper.ts).
 */
function fromHtml(html: string): ExtractedUrl[] {
  const found: Found[] = [];
  const open: Found[] = [];
  const close = (item: Found) => {
    const i = open.lastIndexOf(item);
    if (i >= 0) open.splice(i, 1);
  };
  // An <iframe>'s content is raw text up to the first </iframe> (HTML's parsing rules; htmlparser2 parses
  // it as markup): nothing inside is extracted, and the text is the source as written.
  let iframe: Found | null = null;
  let iframeStart = 0;
  const parser: Parser = new Parser(
    {
      onopentag(name, attribs) {
        if (iframe !== null) return;
        const attrs = URL_ATTRIBUTES[name];
        if (attrs === undefined) return;
        // An <a> inside an open <a> ends the first one, as an HTML parser does.
        if (name === "a") {
          const outer = open.findLast((o) => o.element === "a");
          if (outer) close(outer);
        }
        const urls: string[] = [];
        for (const attr of attrs) {
          let url = (attribs[attr] ?? "").trim();
          // srcset lists "url width" candidates; the first candidate is the representative URL.
          if (attr === "srcset") url = url.split(",")[0]?.trim().split(/\s+/)[0] ?? "";
          if (url !== "" && !SKIP.test(url)) urls.push(url);
        }
        const item = { element: name, urls, alt: attribs.alt ?? "", title: attribs.title ?? "", text: "" };
        found.push(item);
        open.push(item);
        if (name === "iframe") {
          iframe = item;
          iframeStart = parser.endIndex + 1;
        }
      },
      ontext(data) {
        if (iframe !== null) return;
        for (const item of open) {
          if (item.text.length < MAX_TITLE_SOURCE)
            item.text += data.slice(0, MAX_TITLE_SOURCE - item.text.length);
        }
      },
      onclosetag(name) {
        if (iframe !== null) {
          if (name !== "iframe") return;
          const raw = html.slice(
            iframeStart,
            Math.max(iframeStart, Math.min(parser.startIndex, html.length)),
          );
          for (const item of open) {
            if (item.text.length < MAX_TITLE_SOURCE)
              item.text += raw.slice(0, MAX_TITLE_SOURCE - item.text.length);
          }
          close(iframe);
          iframe = null;
          return;
        }
        const item = open.findLast((o) => o.element === name);
        if (item) close(item);
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.write(html);
  parser.end();
  const out: ExtractedUrl[] = [];
  for (const { element, urls, alt, title, text } of found) {
    if (urls.length === 0) continue;
    const name = collapse(text) || collapse(alt) || collapse(title);
    for (const url of urls) out.push(name === "" ? { url, element } : { url, title: name, element });
  }
  return out;
}

const MARKDOWN_LINK = /\[([^\]\n]{0,500})\]\(\s*<?((?:https?:\/\/|mailto:|www\.)[^\s)>]+)>?\s*\)/gi;
const BARE_URL = /\b(?:https?:\/\/|www\.)[^\s<>"'`]+/gi;
const TRAILING_CHAR = /[.,;:!?)\]}'"]/;
const count = (s: string, ch: string) => s.split(ch).length - 1;

function fromText(text: string): ExtractedUrl[] {
  const found: { at: number; item: ExtractedUrl }[] = [];
  const taken: [number, number][] = [];
  for (const m of text.matchAll(MARKDOWN_LINK)) {
    const title = collapse(m[1] ?? "");
    const url = m[2] ?? "";
    found.push({ at: m.index, item: title === "" ? { url } : { url, title } });
    taken.push([m.index, m.index + m[0].length]);
  }
  // Both match lists ascend: one pointer skips bare URLs inside a Markdown link (a `some` over every link
  // per URL was quadratic, 0.44 s on 1 MB of text).
  let next = 0;
  for (const m of text.matchAll(BARE_URL)) {
    while (next < taken.length && (taken[next] as [number, number])[1] <= m.index) next++;
    const link = taken[next];
    if (link !== undefined && m.index >= link[0]) continue;
    // Keep a closing parenthesis only when the URL itself opened one (Wikipedia-style links).
    let url = m[0];
    while (url.length > 0 && TRAILING_CHAR.test(url.at(-1) ?? "")) {
      if (url.endsWith(")") && count(url, "(") >= count(url, ")")) break;
      url = url.slice(0, -1);
    }
    if (url.length > 8) found.push({ at: m.index, item: { url } });
  }
  return found.sort((a, b) => a.at - b.at).map((f) => f.item);
}

function dedupe(items: ExtractedUrl[]): ExtractedUrl[] {
  const seen = new Set<string>();
  return items.filter((i) => {
    const key = JSON.stringify([i.url, i.title ?? null, i.element ?? null]);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Runs the spec's mode selection and fallback; exported for tests and the REPL. */
export function extractUrls(args: Readonly<Record<string, unknown>>, root: unknown): ExtractedUrl[] {
  const html = helperInput(args, root, "html");
  const text = helperInput(args, root, "text");
  const mode = selectMode(args);
  let items: ExtractedUrl[];
  if (mode === "text") items = fromText(text);
  else if (mode === "html") items = fromHtml(html);
  else {
    try {
      items = fromHtml(html);
    } catch {
      items = [];
    }
    if (items.length === 0) items = fromText(text);
  }
  return boolArg(args.deduplicate, false) ? dedupe(items) : items;
}

registerFunction("extract.urls", {
  description: "Extracts links from message.html (or given html/text) as [{url, title?, element?}].",
  args: {
    mode: { type: "string", enum: ["html", "text"], description: "html (default) or text" },
    html: { type: "string", description: "HTML to scan (default message.html)" },
    text: { type: "string", description: "text to scan (default message.text)" },
    deduplicate: {
      type: "boolean",
      description: "drop repeated (url, title, element) entries (default false)",
    },
  },
  run: extractUrls,
});
