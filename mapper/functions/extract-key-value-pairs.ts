/**
 * `call.extract.key_value_pairs`: conservative `Label: value` pairs of a text or HTML body, as ordered
 * `items` plus `values` (first value per normalized key) and `groups` (every value per key).
 *
 * HTML is parsed with htmlparser2 (its DOM, domhandler, is what css-select and the other helpers walk):
 * two-cell table rows, definition lists, `<label>`s and bold/strong key hints are read structurally; then the
 * visible lines of the document go through the text rules. htmlparser2 rather than parse5 here because
 * the helper must finish 1 MB of HTML inside the 100 ms call budget, and pairs live in ordinary markup
 * where the HTML5 tree-repair rules change nothing.
 */
import type { Element, ParentNode } from "domhandler";
import { parseDocument } from "htmlparser2";
import {
  collapse,
  descendants,
  descendantsWithin,
  isElement,
  isHidden,
  visibleLines,
  visibleText,
} from "./dom.ts";
import { helperInput, registerFunction } from "./registry.ts";

export interface KeyValueItem {
  key: string;
  normalized_key: string;
  value: string;
  separator: string | null;
  source: string;
  line: number | null;
}

export interface KeyValuePairs {
  items: KeyValueItem[];
  values: Record<string, string>;
  groups: Record<string, string[]>;
}

interface Options {
  separators: string[];
  maxKeyWords: number;
  allowProse: boolean;
  adjacentBlocks: boolean;
}

/** Most pairs returned per call (a runaway body of `a: b` lines stops here). */
export const MAX_PAIRS = 10_000;
/** Longest key and value kept (characters). */
const MAX_KEY_CHARS = 80;
const MAX_VALUE_CHARS = 2_000;

/** Letters, digits, whitespace and hyphens, starting with a letter. */
const KEY = /^\p{L}[\p{L}\p{N}\s-]*$/u;
/**
 * Words that make a short key read as the start of a sentence ("Please note: …", "We are: …"): such
 * keys are rejected unless `allow_prose` is set.
 */
const PROSE_WORDS = new Set(
  "a an the i we you he she it they is are was were be been am please note if when this that these those there here my our your his her their its and or but so to of in on at for with as by from not no do does did will would can could should".split(
    " ",
  ),
);

/** `Ticket-Type` → `ticket_type`. */
export function normalizeKey(key: string): string {
  return key
    .toLowerCase()
    .replace(/[\s-]+/g, "_")
    .replace(/^_+|_+$/g, "");
}

function acceptKey(raw: string, o: Options): string | null {
  const key = collapse(raw);
  if (key === "" || key.length > MAX_KEY_CHARS || !KEY.test(key)) return null;
  const words = key.split(" ");
  if (words.length > o.maxKeyWords) return null;
  if (!o.allowProse && words.length > 1 && PROSE_WORDS.has((words[0] as string).toLowerCase())) return null;
  if (!o.allowProse && words.length > 2 && words.every((w) => w === w.toLowerCase())) return null;
  return key;
}

function cleanValue(raw: string): string | null {
  let value = raw.trim();
  if (value.endsWith(".") && !value.endsWith("..")) value = value.slice(0, -1).trimEnd();
  if (value === "" || value.length > MAX_VALUE_CHARS) return null;
  return value;
}

/** One line as `key<sep>value`, trying the separators in order; null when it is not a pair. */
function lineToPair(line: string, o: Options): { key: string; value: string; separator: string } | null {
  const text = line.trim();
  if (text === "" || text.endsWith("?") || text.endsWith("!")) return null;
  for (const sep of o.separators) {
    const at = text.indexOf(sep);
    if (at <= 0) continue;
    const key = acceptKey(text.slice(0, at), o);
    if (key === null) continue;
    const rest = text.slice(at + sep.length);
    // `https://…`: the scheme is not a key.
    if (sep === ":" && rest.startsWith("//")) continue;
    const value = cleanValue(rest);
    if (value === null) continue;
    return { key, value, separator: sep };
  }
  return null;
}

class Collector {
  readonly items: KeyValueItem[] = [];
  private readonly seen = new Set<string>();

  add(key: string, value: string, separator: string | null, source: string, line: number | null): void {
    if (this.items.length >= MAX_PAIRS) return;
    const normalized = normalizeKey(key);
    if (normalized === "") return;
    // The same pair found structurally and again in the text lines is reported once.
    const id = `${normalized}\u0000${value}`;
    if (source === "html_text" && this.seen.has(id)) return;
    this.seen.add(id);
    this.items.push({ key, normalized_key: normalized, value, separator, source, line });
  }

  result(): KeyValuePairs {
    const values: Record<string, string> = Object.create(null);
    const groups: Record<string, string[]> = Object.create(null);
    for (const item of this.items) {
      const k = item.normalized_key;
      if (!Object.hasOwn(values, k)) {
        values[k] = item.value;
        groups[k] = [];
      }
      (groups[k] as string[]).push(item.value);
    }
    // Plain objects again for the caller (JSON output, `var` reads).
    return { items: this.items, values: { ...values }, groups: { ...groups } };
  }
}

function fromTextLines(text: string, o: Options, c: Collector, source: string): void {
  const lines = text.split(/\r\n|\r|\n/);
  for (let i = 0; i < lines.length && c.items.length < MAX_PAIRS; i++) {
    const pair = lineToPair(lines[i] as string, o);
    if (pair !== null) c.add(pair.key, pair.value, pair.separator, source, i + 1);
  }
}

/** A label cell's text as a key: a trailing separator (`Order ID:`) is dropped. */
function labelKey(raw: string, o: Options): { key: string; separator: string | null } | null {
  let text = collapse(raw);
  let separator: string | null = null;
  for (const sep of o.separators) {
    if (text.endsWith(sep)) {
      text = text.slice(0, -sep.length).trimEnd();
      separator = sep;
      break;
    }
  }
  const key = acceptKey(text, o);
  return key === null ? null : { key, separator };
}

const cellsOf = (tr: Element) =>
  tr.children.filter((n): n is Element => isElement(n) && (n.tagName === "td" || n.tagName === "th"));

const CELL_TAGS: ReadonlySet<string> = new Set(["td", "th"]);

const elementChildren = (el: Element) => el.children.filter(isElement);

function fromHtml(html: string, o: Options, c: Collector): void {
  const doc = parseDocument(html) as unknown as ParentNode;
  // Cells that hold a table, found in one pass (each table marks its nearest enclosing cell; that cell's
  // own table marks the next one out).
  const layoutCells = new Set<Element>();
  for (const [el, cell] of descendantsWithin(doc, CELL_TAGS))
    if (el.tagName === "table" && cell !== null) layoutCells.add(cell);
  const hidden = new Set<Element>();
  for (const el of descendants(doc)) {
    if (c.items.length >= MAX_PAIRS) break;
    const parent = el.parent as Element | null;
    if (isHidden(el) || (parent !== null && hidden.has(parent))) {
      hidden.add(el);
      continue;
    }
    switch (el.tagName) {
      case "tr": {
        const cells = cellsOf(el);
        if (cells.length !== 2) break;
        // A cell that holds a table is layout, not a label.
        if (cells.some((td) => layoutCells.has(td))) break;
        const label = labelKey(visibleText(cells[0] as Element), o);
        const value = cleanValue(visibleText(cells[1] as Element));
        if (label !== null && value !== null) c.add(label.key, value, label.separator, "html_table", null);
        break;
      }
      case "dt": {
        let next = el.next;
        while (next !== null && !isElement(next)) next = next.next;
        if (next === null || (next as Element).tagName !== "dd") break;
        const label = labelKey(visibleText(el), o);
        const value = cleanValue(visibleText(next as Element));
        if (label !== null && value !== null) c.add(label.key, value, label.separator, "html_dl", null);
        break;
      }
      case "label":
      case "b":
      case "strong":
      case "th": {
        if (el.tagName === "th" && parent !== null && cellsOf(parent).length === 2) break; // read as a row
        // `<b>Order ID:</b> AZ-123`: the text after the hint, up to the next line break or block.
        const label = labelKey(visibleText(el), o);
        if (label === null || (label.separator === null && el.tagName !== "label")) break;
        let value = "";
        for (let n = el.next; n !== null; n = n.next) {
          if (n.type === "text") value += n.data;
          else if (isElement(n)) {
            if (n.tagName === "br" || isHidden(n) || n.tagName === "b" || n.tagName === "strong") break;
            if (["p", "div", "table", "tr", "td", "li", "ul", "ol", "h1", "h2", "h3"].includes(n.tagName))
              break;
            value += ` ${visibleText(n)}`;
          }
        }
        const v = cleanValue(collapse(value));
        if (v !== null)
          c.add(label.key, v, label.separator, `html_${el.tagName === "label" ? "label" : "strong"}`, null);
        break;
      }
      case "p":
      case "div":
        if (!o.adjacentBlocks) break;
        {
          // Opt-in: `<p>Order ID</p><p>AZ-123</p>` — a short key-like block followed by a sibling block.
          if (elementChildren(el).some((k) => k.tagName === "p" || k.tagName === "div")) break;
          let next = el.next;
          while (next !== null && !isElement(next)) next = next.next;
          if (next === null || (next as Element).tagName !== el.tagName) break;
          const label = labelKey(visibleText(el), o);
          const value = cleanValue(visibleText(next as Element));
          if (label !== null && value !== null && lineToPair(value, o) === null)
            c.add(label.key, value, label.separator, "html_adjacent", null);
        }
        break;
    }
  }
  // Then the lines a reader sees: `Order ID: AZ-123` written as plain text in the markup.
  // Lines are numbered as the document's non-empty visible lines.
  fromTextLines(
    visibleLines(doc)
      .replace(/[ \t]*\n\s*/g, "\n")
      .trim(),
    o,
    c,
    "html_text",
  );
}

function options(args: Readonly<Record<string, unknown>>): Options {
  const seps = Array.isArray(args.separators)
    ? args.separators.filter((s): s is string => typeof s === "string" && s.length === 1 && s.trim() !== "")
    : [":", "="];
  const words = typeof args.max_key_words === "number" && args.max_key_words >= 1 ? args.max_key_words : 5;
  return {
    separators: seps,
    maxKeyWords: Math.floor(words),
    allowProse: args.allow_prose === true,
    adjacentBlocks: args.allow_html_adjacent_blocks === true,
  };
}

/** The helper itself; exported for tests and the benchmark. */
export function extractKeyValuePairs(args: Readonly<Record<string, unknown>>, root: unknown): KeyValuePairs {
  const o = options(args);
  const mode = args.mode === "html" || args.mode === "text" ? args.mode : "auto";
  if (mode !== "text") {
    const html = helperInput(args, root, "html");
    if (html.trim() !== "") {
      const c = new Collector();
      fromHtml(html, o, c);
      if (mode === "html" || c.items.length > 0) return c.result();
    } else if (mode === "html") return new Collector().result();
  }
  const c = new Collector();
  fromTextLines(helperInput(args, root, "text"), o, c, "text");
  return c.result();
}

registerFunction("extract.key_value_pairs", {
  description:
    "Extracts `Label: value` pairs from message.html or message.text as {items, values, groups} (values: first value per normalized key; groups: all of them).",
  args: {
    mode: {
      type: "string",
      enum: ["auto", "html", "text"],
      description: "auto (default: HTML when it yields pairs, else text), html or text",
    },
    html: { type: "string", description: "HTML to read (default message.html)" },
    text: { type: "string", description: "text to read (default message.text)" },
    separators: {
      type: "array",
      description: 'single non-space characters tried in order (default [":", "="])',
    },
    max_key_words: { type: "number", description: "most words in a key (default 5)" },
    allow_prose: {
      type: "boolean",
      description: 'accept sentence-like keys such as "Please note" (default false)',
    },
    allow_html_adjacent_blocks: {
      type: "boolean",
      description:
        "pair a short block with the next sibling block, e.g. <p>Label</p><p>value</p> (default false)",
    },
  },
  run: extractKeyValuePairs,
});
