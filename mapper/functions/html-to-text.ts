/** `call.transform.html_to_text`: HTML → readable plain text (html-to-text). */
import { compile } from "html-to-text";
import { helperInput, messageField, registerFunction } from "./registry.ts";

// Compiled once: `convert` rebuilds its formatter from the options on every call, which cost more
// than the conversion itself for the short HTML bodies most mail has.
const convertHtml = compile({
  wordwrap: false,
  selectors: [{ selector: "img", format: "skip" }],
});

/**
 * HTML → readable plain text: links keep their URL in brackets, images are skipped, lines are not
 * re-wrapped. The one conversion the service uses, both for this helper and for the `text` of mail
 * that has only an HTML body.
 */
export function htmlToPlainText(html: string): string {
  return convertHtml(html).trim();
}

registerFunction("transform.html_to_text", {
  description:
    "Converts HTML to plain text. `html` defaults to message.html; when the HTML is empty, `text` (default message.text) is returned, trimmed.",
  args: {
    html: { type: "string", description: "HTML to convert (default message.html)" },
    text: { type: "string", description: "fallback text when the HTML is empty (default message.text)" },
  },
  run(args, root) {
    const html = helperInput(args, root, "html");
    // Trimmed like a conversion: a text body's final line break is not part of the text.
    if (html.trim() === "")
      return (typeof args.text === "string" ? args.text : messageField(root, "text")).trim();
    return htmlToPlainText(html);
  },
});
