/** `call.transform.html_to_text`: HTML → readable plain text (html-to-text). */
import { convert } from "html-to-text";
import { helperInput, messageField, registerFunction } from "./registry.ts";

registerFunction("transform.html_to_text", {
  description:
    "Converts HTML to plain text. `html` defaults to message.html; when the HTML is empty, `text` (default message.text) is returned.",
  args: {
    html: { type: "string", description: "HTML to convert (default message.html)" },
    text: { type: "string", description: "fallback text when the HTML is empty (default message.text)" },
  },
  run(args, root) {
    const html = helperInput(args, root, "html");
    if (html.trim() === "") return typeof args.text === "string" ? args.text : messageField(root, "text");
    return convert(html, {
      wordwrap: false,
      selectors: [{ selector: "img", format: "skip" }],
    }).trim();
  },
});
