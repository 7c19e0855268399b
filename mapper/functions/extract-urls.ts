/** `call.extract.urls`: links of an HTML or plain-text body (spec "call.extract.urls"). */
import * as cheerio from "cheerio";
import type { Element } from "domhandler";
import { boolArg, messageField, registerFunction, selectMode } from "./registry.ts";

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
const SELECTOR = Object.keys(URL_ATTRIBUTES).join(",");
/** Not links a receiver can follow. */
const SKIP = /^(?:#|javascript:|data:|about:|cid:)/i;

const collapse = (s: string) => s.replace(/\s+/g, " ").trim();

function fromHtml(html: string): ExtractedUrl[] {
  const $ = cheerio.load(html);
  const out: ExtractedUrl[] = [];
  $(SELECTOR).each((_, el) => {
    const element = (el as Element).tagName.toLowerCase();
    const node = $(el);
    const title =
      collapse(node.text()) || collapse(node.attr("alt") ?? "") || collapse(node.attr("title") ?? "");
    for (const attr of URL_ATTRIBUTES[element] ?? []) {
      let url = (node.attr(attr) ?? "").trim();
      // srcset lists "url width" candidates; the first candidate is the representative URL.
      if (attr === "srcset") url = url.split(",")[0]?.trim().split(/\s+/)[0] ?? "";
      if (url === "" || SKIP.test(url)) continue;
      out.push(title === "" ? { url, element } : { url, title, element });
    }
  });
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
  for (const m of text.matchAll(BARE_URL)) {
    if (taken.some(([a, b]) => m.index >= a && m.index < b)) continue;
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
  const html = typeof args.html === "string" ? args.html : messageField(root, "html");
  const text = typeof args.text === "string" ? args.text : messageField(root, "text");
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
