/**
 * `call.extract.dom`: values, or repeated records, selected from message HTML with a CSS selector
 * (css-select, through cheerio's parse5 tree) or an XPath expression (see `xpath.ts`). Hidden content
 * (head, script, style, noscript, template, `hidden`, `display:none`) is removed before matching; the
 * input is cut to MAX_DOM_INPUT_CHARS before parsing.
 */
import * as cheerio from "cheerio";
import { compile as compileCss, selectAll } from "css-select";
import type { AnyNode, Element, ParentNode } from "domhandler";
import { getOuterHTML } from "domutils";
import { MapperRuntimeError } from "../errors.ts";
import { collapse, descendants, isHidden, textContent } from "./dom.ts";
import { messageField, registerFunction } from "./registry.ts";
import { xpathSelect, xpathSyntaxError } from "./xpath.ts";

/** Longest HTML parsed (characters); longer input is cut and `summary.truncated` is set. */
export const MAX_DOM_INPUT_CHARS = 200_000;
/** Longest `html`/`outer_html` projection (characters). */
export const MAX_DOM_HTML_CHARS = 8_192;
export const DEFAULT_DOM_MATCHES = 16;
export const MAX_DOM_MATCHES = 32;

const VALUE_KINDS = ["text", "attr", "html", "outer_html", "exists", "count"] as const;
type ValueKind = (typeof VALUE_KINDS)[number];

interface Projection {
  value: ValueKind;
  attr: string | null;
  many: boolean;
  maxMatches: number;
  fallback: unknown;
  required: boolean;
  normalize: boolean;
}

export interface DomItem {
  index: number;
  tag: string;
  value: unknown;
  text: string;
  attrs: Record<string, string>;
}

interface Engine {
  kind: "css" | "xpath";
  select(selector: string, context: ParentNode, relative: boolean): Element[];
}

const CSS: Engine = {
  kind: "css",
  select(selector, context) {
    return selectAll(selector, context) as Element[];
  },
};
const XPATH: Engine = { kind: "xpath", select: xpathSelect };

function fail(message: string): never {
  throw new Error(`extract.dom: ${message}`);
}

function projection(spec: Readonly<Record<string, unknown>>, where: string): Projection {
  const value = spec.value;
  if (typeof value !== "string" || !(VALUE_KINDS as readonly string[]).includes(value))
    fail(`${where}value must be one of ${VALUE_KINDS.join(", ")}`);
  const attr = typeof spec.attr === "string" && spec.attr !== "" ? spec.attr.toLowerCase() : null;
  if (value === "attr" && attr === null) fail(`${where}attr is required when value is "attr"`);
  const max = typeof spec.max_matches === "number" ? Math.floor(spec.max_matches) : DEFAULT_DOM_MATCHES;
  return {
    value: value as ValueKind,
    attr,
    many: spec.many === true,
    maxMatches: Math.min(Math.max(max, 1), MAX_DOM_MATCHES),
    fallback: spec.default === undefined ? null : spec.default,
    required: spec.required === true,
    normalize: spec.normalize_whitespace !== false,
  };
}

const cap = (s: string, state: { truncated: boolean }) => {
  if (s.length <= MAX_DOM_HTML_CHARS) return s;
  state.truncated = true;
  return s.slice(0, MAX_DOM_HTML_CHARS);
};

function textOf(el: Element, normalize: boolean): string {
  const raw = textContent(el);
  return normalize ? collapse(raw) : raw;
}

function project(el: Element, p: Projection, state: { truncated: boolean }): unknown {
  switch (p.value) {
    case "text":
      return textOf(el, p.normalize);
    case "attr":
      return el.attribs[p.attr as string] ?? null;
    case "html":
      return cap(
        el.children.map((c) => getOuterHTML(c as AnyNode, { decodeEntities: false })).join(""),
        state,
      );
    case "outer_html":
      return cap(getOuterHTML(el, { decodeEntities: false }), state);
    default:
      return null;
  }
}

/** Matches of `selector` under `context`, and the projection of the first `maxMatches`. */
function scalar(engine: Engine, selector: string, context: ParentNode, p: Projection, relative: boolean) {
  const state = { truncated: false };
  const matched = engine.select(selector, context, relative);
  const kept = matched.slice(0, p.maxMatches);
  if (matched.length > kept.length) state.truncated = true;
  if (p.value === "exists" || p.value === "count") {
    return {
      matched,
      result: {
        value: p.value === "exists" ? kept.length > 0 : kept.length,
        values: [] as unknown[],
        item: null as DomItem | null,
        items: [] as DomItem[],
      },
      matchCount: kept.length,
      valueCount: 0,
      state,
    };
  }
  const items: DomItem[] = [];
  for (const el of p.many ? kept : kept.slice(0, 1)) {
    items.push({
      index: items.length,
      tag: el.tagName,
      value: project(el, p, state),
      text: textOf(el, true),
      attrs: { ...el.attribs },
    });
  }
  const values = items.map((i) => i.value).filter((v) => v !== null);
  return {
    matched,
    result: {
      value: values.length > 0 ? values[0] : p.fallback,
      values,
      item: items[0] ?? null,
      items,
    },
    matchCount: kept.length,
    valueCount: values.length,
    state,
  };
}

/** Parses `html` with hidden content removed (one pass over each parent that loses a child). */
function documentOf(html: string): ParentNode {
  const root = cheerio.load(html).root()[0] as unknown as ParentNode;
  const hidden = new Set<AnyNode>();
  const parents = new Set<ParentNode>();
  for (const el of descendants(root)) {
    if (!isHidden(el)) continue;
    hidden.add(el);
    if (el.parent !== null) parents.add(el.parent);
  }
  for (const parent of parents) {
    const kept = parent.children.filter((c) => !hidden.has(c));
    for (let i = 0; i < kept.length; i++) {
      const k = kept[i] as AnyNode;
      k.prev = (kept[i - 1] as AnyNode | undefined) ?? null;
      k.next = (kept[i + 1] as AnyNode | undefined) ?? null;
    }
    parent.children = kept;
  }
  for (const el of hidden) el.parent = null;
  return root;
}

function fieldsOf(args: Readonly<Record<string, unknown>>): [string, Record<string, unknown>][] | null {
  const f = args.fields;
  if (f === undefined || f === null) return null;
  if (typeof f !== "object" || Array.isArray(f)) fail("fields must be an object of {selector, value, …}");
  const out: [string, Record<string, unknown>][] = [];
  for (const [name, spec] of Object.entries(f as Record<string, unknown>)) {
    if (typeof spec !== "object" || spec === null || Array.isArray(spec))
      fail(`fields.${name} must be an object`);
    out.push([name, spec as Record<string, unknown>]);
  }
  return out;
}

/** The helper itself; exported for tests and the benchmark. */
export function extractDom(args: Readonly<Record<string, unknown>>, root: unknown): unknown {
  let html = typeof args.html === "string" ? args.html : messageField(root, "html");
  let inputTruncated = false;
  if (html.length > MAX_DOM_INPUT_CHARS) {
    html = html.slice(0, MAX_DOM_INPUT_CHARS);
    inputTruncated = true;
  }
  const engine = args.selector_type === "css" ? CSS : args.selector_type === "xpath" ? XPATH : null;
  if (engine === null) fail('selector_type must be "css" or "xpath"');
  if (typeof args.selector !== "string" || args.selector.trim() === "") fail("selector is required");
  const top = projection(args, "");
  const fields = fieldsOf(args);
  const doc = documentOf(html);

  if (fields === null) {
    const r = scalar(engine, args.selector, doc, top, false);
    if (top.required && r.matched.length === 0) required(args.selector);
    return {
      ...r.result,
      summary: {
        match_count: r.matchCount,
        value_count: r.valueCount,
        truncated: inputTruncated || r.state.truncated,
      },
    };
  }

  // Records: the selector finds containers; each field selector runs inside its container.
  const specs = fields.map(([name, spec]) => {
    if (spec.selector_type !== undefined && spec.selector_type !== engine.kind)
      fail(`fields.${name}: mixed CSS and XPath record extraction is not supported`);
    if (typeof spec.selector !== "string" || spec.selector.trim() === "")
      fail(`fields.${name}.selector is required`);
    if (engine.kind === "xpath" && spec.selector.trimStart().startsWith("/"))
      fail(`fields.${name}: an XPath field selector must be relative, e.g. .//span`);
    return { name, selector: spec.selector, p: projection(spec, `fields.${name}.`) };
  });
  const containers = engine.select(args.selector, doc, false);
  if (top.required && containers.length === 0) required(args.selector);
  const kept = containers.slice(0, top.maxMatches);
  let truncated = inputTruncated || containers.length > kept.length;
  const include = includeContainer(args.include_container);
  const items: Record<string, unknown>[] = [];
  for (const container of kept) {
    const values: Record<string, unknown> = {};
    const fieldResults: Record<string, unknown> = {};
    let complete = true;
    for (const f of specs) {
      const r = scalar(engine, f.selector, container, f.p, true);
      if (f.p.required && r.matched.length === 0) complete = false;
      truncated ||= r.state.truncated;
      values[f.name] = r.result.value;
      fieldResults[f.name] = {
        value: r.result.value,
        values: r.result.values,
        match_count: r.matchCount,
        value_count: r.valueCount,
        truncated: r.state.truncated,
      };
    }
    // A record missing a required field is left out.
    if (!complete) continue;
    const item: Record<string, unknown> = { index: items.length, values, fields: fieldResults };
    if (include !== null) {
      const c: Record<string, unknown> = {};
      if (include.tag) c.tag = container.tagName;
      if (include.attrs.length > 0) {
        const attrs: Record<string, string> = {};
        for (const a of include.attrs)
          if (container.attribs[a] !== undefined) attrs[a] = container.attribs[a];
        c.attrs = attrs;
      }
      item.container = c;
    }
    items.push(item);
  }
  return {
    value: null,
    values: [],
    item: items[0] ?? null,
    items,
    summary: { item_count: items.length, truncated },
  };
}

/** Container attributes a record may carry (no event handlers, no inline style). */
const SAFE_ATTRS = new Set(["id", "class", "href", "src", "alt", "title", "name", "role", "lang", "dir"]);

function includeContainer(v: unknown): { tag: boolean; attrs: string[] } | null {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return null;
  const o = v as Record<string, unknown>;
  const attrs = Array.isArray(o.attrs)
    ? o.attrs
        .filter((a): a is string => typeof a === "string")
        .map((a) => a.toLowerCase())
        .filter((a) => SAFE_ATTRS.has(a) || a.startsWith("data-") || a.startsWith("aria-"))
    : [];
  return { tag: o.tag === true, attrs };
}

function required(selector: string): never {
  throw new MapperRuntimeError(
    "mapper.required_missing",
    `extract.dom: no element matches the required selector ${JSON.stringify(selector)}`,
  );
}

/** Why a CSS selector does not compile, or null. */
function cssSyntaxError(selector: string): string | null {
  try {
    compileCss(selector);
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** What a record field may say. */
const FIELD_KEYS = [
  "selector",
  "selector_type",
  "value",
  "attr",
  "many",
  "max_matches",
  "default",
  "required",
  "normalize_whitespace",
];

const isLiteralObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v) && Object.keys(v).length !== 1;

/**
 * Validation-time checks of what is written as literals: the selector engine, each selector's syntax,
 * `value` and `attr`, and the record fields (relative XPath, one engine). Expressions are checked when
 * they run.
 */
function checkDom(args: Readonly<Record<string, unknown>>): { path: string; message: string }[] {
  const problems: { path: string; message: string }[] = [];
  const kind = args.selector_type;
  if (typeof kind === "string" && kind !== "css" && kind !== "xpath")
    problems.push({ path: "selector_type", message: 'selector_type must be "css" or "xpath"' });
  const syntax = (selector: unknown, path: string, relative: boolean) => {
    if (typeof selector !== "string" || (kind !== "css" && kind !== "xpath")) return;
    if (selector.trim() === "") {
      problems.push({ path, message: "the selector is empty" });
      return;
    }
    const error = kind === "css" ? cssSyntaxError(selector) : xpathSyntaxError(selector);
    if (error !== null)
      problems.push({ path, message: `invalid ${kind === "css" ? "CSS" : "XPath"} selector: ${error}` });
    else if (relative && kind === "xpath" && selector.trimStart().startsWith("/"))
      problems.push({ path, message: "an XPath field selector must be relative, e.g. .//span" });
  };
  const projection = (spec: Readonly<Record<string, unknown>>, prefix: string) => {
    const value = spec.value;
    if (typeof value === "string" && !(VALUE_KINDS as readonly string[]).includes(value))
      problems.push({ path: `${prefix}value`, message: `value must be one of ${VALUE_KINDS.join(", ")}` });
    if (value === "attr" && !Object.hasOwn(spec, "attr"))
      problems.push({
        path: prefix === "" ? "attr" : `${prefix}attr`,
        message: 'attr is required when value is "attr"',
      });
  };
  syntax(args.selector, "selector", false);
  projection(args, "");
  if (typeof args.max_matches === "number" && (args.max_matches < 1 || args.max_matches > MAX_DOM_MATCHES))
    problems.push({ path: "max_matches", message: `max_matches must be from 1 to ${MAX_DOM_MATCHES}` });
  if (isLiteralObject(args.fields)) {
    for (const [name, spec] of Object.entries(args.fields)) {
      if (!isLiteralObject(spec)) continue;
      for (const key of Object.keys(spec))
        if (!FIELD_KEYS.includes(key))
          problems.push({
            path: `fields/${name}/${key}`,
            message: `unknown field key ${JSON.stringify(key)} (allowed: ${FIELD_KEYS.join(", ")})`,
          });
      if (!Object.hasOwn(spec, "selector") || !Object.hasOwn(spec, "value"))
        problems.push({
          path: `fields/${name}`,
          message: `field ${JSON.stringify(name)} needs a selector and a value`,
        });
      if (typeof spec.selector_type === "string" && spec.selector_type !== kind)
        problems.push({
          path: `fields/${name}/selector_type`,
          message: "a field uses its record's selector engine: mixed CSS and XPath is not supported",
        });
      syntax(spec.selector, `fields/${name}/selector`, true);
      projection(spec, `fields/${name}/`);
    }
  }
  return problems;
}

registerFunction("extract.dom", {
  description:
    "Selects values (or records, with `fields`) from message.html with a CSS or XPath selector: {value, values, item, items, summary}.",
  args: {
    html: { type: "string", description: "HTML to read (default message.html; cut to 200,000 characters)" },
    selector_type: { type: "string", enum: ["css", "xpath"], required: true, description: "css or xpath" },
    selector: { type: "string", required: true, description: "CSS selector or XPath expression" },
    value: {
      type: "string",
      enum: VALUE_KINDS,
      required: true,
      description: "text, attr, html, outer_html, exists or count",
    },
    attr: { type: "string", description: 'attribute read when value is "attr"' },
    many: { type: "boolean", description: "keep every match's value, not only the first (default false)" },
    max_matches: { type: "number", description: "matches kept (default 16, at most 32)" },
    default: { type: "any", description: "value when nothing is projected (default null)" },
    required: {
      type: "boolean",
      description: "fail the mapper (mapper.required_missing) when nothing matches (default false)",
    },
    normalize_whitespace: { type: "boolean", description: "collapse whitespace of text (default true)" },
    fields: {
      type: "object",
      description:
        "record fields {name: {selector, value, attr?, many?, default?, required?}}, run inside each match",
    },
    include_container: {
      type: "object",
      description: "add each record's container {tag?: true, attrs?: [names]} (safe attributes only)",
    },
  },
  run: extractDom,
  check: checkDom,
});
