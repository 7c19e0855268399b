/**
 * Server-side HTML for the dashboard: a tagged template that escapes every interpolated value unless it
 * is already {@link SafeHtml}. Escaping is Bun's `escapeHTML` (`& < > " '`), which makes a value safe in
 * element content and in quoted attribute values — the only two places the templates interpolate into.
 */

/** A fragment that is already HTML (built by {@link html} or {@link unsafeRaw}); never escaped again. */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

/** What a template may interpolate: text (escaped), safe fragments, lists of either, or nothing. */
export type HtmlValue = SafeHtml | string | number | boolean | null | undefined | readonly HtmlValue[];

/** Escapes text for HTML element content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return Bun.escapeHTML(text);
}

function render(value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return "";
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join("");
  return escapeHtml(String(value));
}

/**
 * Builds HTML: `html\`<td>${name}</td>\`` escapes `name`; nested `html` results and arrays of them are
 * inserted as they are. `null`, `undefined` and `false` render nothing (for `cond && html\`…\``).
 */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0] ?? "";
  for (let i = 0; i < values.length; i++) out += render(values[i]) + (strings[i + 1] ?? "");
  return new SafeHtml(out);
}

/** Marks trusted markup as HTML. Only for constants of the dashboard itself, never for user data. */
export function unsafeRaw(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

/** Pretty-prints JSON when `text` parses as JSON, else returns it unchanged (for capture previews). */
export function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}
