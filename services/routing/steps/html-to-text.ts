/**
 * `html_to_text` (docs/routing.md § `html_to_text`): writes a plain-text rendering of `message.html` to
 * `message.text`, so a map step that reads `text` (the chat steps, a mapper) gets readable text from an
 * HTML-only message. The rendering is the html-to-text library's, configured by the arguments; the same
 * message and arguments always give the same text. A message without HTML is left unchanged.
 */

import { type Static, Type } from "@sinclair/typebox";
import { compile, type FormatCallback, type HtmlToTextOptions } from "html-to-text";
import { pointer, type ValidationIssue } from "../issues.ts";
import { rejectUnknownArgs } from "./args.ts";
import type { TransformStep } from "./types.ts";

/** The widest soft-wrap column accepted. */
export const MAX_WRAP_WIDTH = 1000;

/**
 * HTML beyond this many characters is not rendered. Transforms run on the delivery worker's thread and
 * the rendering costs about a second per megabyte, so a huge HTML body would otherwise stall every
 * delivery of that worker; the text of the first 2 million characters is what a receiver can use.
 */
export const MAX_HTML_CHARS = 2_000_000;

const HtmlToTextArgs = Type.Object(
  {
    prefer: Type.Optional(
      Type.Union([Type.Literal("html"), Type.Literal("text")], {
        default: "html",
        description:
          '"html": always convert the HTML; "text": keep a non-empty text body, convert only without one',
      }),
    ),
    width: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_WRAP_WIDTH,
        default: 80,
        description: "soft wrap column; 0 disables wrapping",
      }),
    ),
    preserve_links: Type.Optional(
      Type.Boolean({ default: true, description: "render a link as `text (url)`" }),
    ),
    collapse_whitespace: Type.Optional(
      Type.Boolean({ default: true, description: "collapse runs of spaces and of blank lines" }),
    ),
    keep_tables: Type.Optional(
      Type.Boolean({ default: false, description: "render each table row as tab-separated cells" }),
    ),
  },
  { additionalProperties: false, examples: [{}, { width: 0, preserve_links: true, keep_tables: true }] },
);

/** `html_to_text` args; every one optional. */
export type HtmlToTextStepArgs = Static<typeof HtmlToTextArgs>;

const ARG_NAMES = Object.keys(HtmlToTextArgs.properties);

/**
 * A table as rows of tab-separated cells: each cell's text on one line (its own line breaks and tabs
 * become spaces), cells joined by a tab, rows by a line break.
 */
const tsvTable: FormatCallback = (elem, walk, builder, formatOptions) => {
  builder.openTable();
  const cell = (node: (typeof elem.children)[number]) => {
    builder.openTableCell({ maxColumnWidth: Number.MAX_SAFE_INTEGER });
    walk((node as typeof elem).children, builder);
    builder.closeTableCell({ colspan: 1, rowspan: 1 });
  };
  const rows = (node: typeof elem): void => {
    for (const child of node.children as (typeof elem)[]) {
      if (child.type !== "tag") continue;
      if (["thead", "tbody", "tfoot"].includes(child.name ?? "")) rows(child);
      else if (child.name === "tr") {
        builder.openTableRow();
        for (const c of child.children as (typeof elem)[]) {
          if (c.type === "tag" && (c.name === "td" || c.name === "th")) cell(c);
        }
        builder.closeTableRow();
      }
    }
  };
  rows(elem);
  builder.closeTable({
    tableToString: (table) =>
      table.map((row) => row.map((c) => c.text.replace(/\s+/g, " ").trim()).join("\t")).join("\n"),
    leadingLineBreaks: formatOptions.leadingLineBreaks ?? 1,
    trailingLineBreaks: formatOptions.trailingLineBreaks ?? 1,
  });
};

/** The library options for `args`. */
function converterOptions(args: HtmlToTextStepArgs): HtmlToTextOptions {
  const width = args.width ?? 80;
  const links = args.preserve_links ?? true;
  const collapse = args.collapse_whitespace ?? true;
  return {
    wordwrap: width === 0 ? false : width,
    preserveNewlines: !collapse,
    formatters: { tsvTable },
    selectors: [
      { selector: "img", format: "skip" },
      {
        selector: "a",
        options: links ? { linkBrackets: ["(", ")"], hideLinkHrefIfSameAsText: true } : { ignoreHref: true },
      },
      // Headings keep their case (the library's default upper-cases them).
      ...["h1", "h2", "h3", "h4", "h5", "h6"].map((selector) => ({
        selector,
        options: { uppercase: false },
      })),
      // Tables: a row per line with tab-separated cells, or (the default) linearized, a cell per line.
      ...(args.keep_tables === true
        ? [{ selector: "table", format: "tsvTable" }]
        : ["table", "tr", "td", "th"].map((selector) => ({
            selector,
            format: "block",
            options: { leadingLineBreaks: 1, trailingLineBreaks: 1 },
          }))),
    ],
  };
}

/**
 * Compiled converters by their options: compiling the selectors costs more than converting a typical
 * message, and the options take few values (32 combinations of the booleans and `prefer` aside, times
 * the widths in use), so they are kept.
 */
const converters = new Map<string, (html: string) => string>();

function converterFor(args: HtmlToTextStepArgs): (html: string) => string {
  const key = `${args.width ?? 80}|${args.preserve_links ?? true}|${args.collapse_whitespace ?? true}|${args.keep_tables ?? false}`;
  let converter = converters.get(key);
  if (converter === undefined) {
    converter = compile(converterOptions(args));
    converters.set(key, converter);
  }
  return converter;
}

/** Converts `html` as the step does with `args`. */
export function renderHtmlText(html: string, args: HtmlToTextStepArgs): string {
  const text = converterFor(args)(html.length > MAX_HTML_CHARS ? html.slice(0, MAX_HTML_CHARS) : html);
  if (args.collapse_whitespace === false) return text.trim();
  return text
    .split("\n")
    .map((line) => line.replace(/[ \u00a0]{2,}/g, " ").trimEnd())
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

function validate(args: Readonly<Record<string, unknown>>, path: string): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  rejectUnknownArgs(args, ARG_NAMES, path, issues);
  const { prefer, width } = args;
  if (prefer !== undefined && prefer !== "html" && prefer !== "text")
    issues.push({ path: pointer(path, "prefer"), message: 'must be "html" or "text"' });
  if (
    width !== undefined &&
    !(Number.isInteger(width) && (width as number) >= 0 && (width as number) <= MAX_WRAP_WIDTH)
  )
    issues.push({
      path: pointer(path, "width"),
      message: `must be an integer from 0 (no wrapping) to ${MAX_WRAP_WIDTH}`,
    });
  for (const key of ["preserve_links", "collapse_whitespace", "keep_tables"]) {
    if (args[key] !== undefined && typeof args[key] !== "boolean")
      issues.push({ path: pointer(path, key), message: "must be a boolean" });
  }
  return issues;
}

/** The `html_to_text` step. */
export const htmlToTextStep = {
  name: "html_to_text",
  kind: "transform",
  summary: "Writes a plain-text rendering of the HTML body to the text body.",
  args: HtmlToTextArgs,
  validate,
  apply(message, args) {
    if (message.html.trim() === "") return message;
    if (args.prefer === "text" && message.text.trim() !== "") return message;
    return { ...message, text: renderHtmlText(message.html, args), text_source: "html" };
  },
} as const satisfies TransformStep<typeof HtmlToTextArgs>;
