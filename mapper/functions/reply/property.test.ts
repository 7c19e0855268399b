/** Properties of the segmentation over generated bodies: it never throws and never invents text. */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { segmentHtml, segmentText } from "./index.ts";

const piece = fc.constantFrom(
  "Hello",
  "> quoted",
  ">> deeper",
  "On Mon, Jan 8, 2024 at 10:15 AM Bob <bob@example.com> wrote:",
  "From: Bob <bob@example.com>",
  "Sent: Monday",
  "Subject: x",
  "---------- Forwarded message ---------",
  "-----Original Message-----",
  "-- ",
  "Thanks,",
  "Alice",
  "Sent from my iPhone",
  "",
  "________________________________",
  "Mit freundlichen Grüßen",
  "2024年1月8日(月) 10:15 Bob <bob@example.com>:",
  "    indented code",
);
const body = fc.array(piece, { maxLength: 30 }).map((lines) => lines.join("\n"));

describe("segmentation properties", () => {
  test("the reply content is made of the body's own lines, in order; segments never throw", () => {
    fc.assert(
      fc.property(body, fc.boolean(), (text, split) => {
        const r = segmentText(text, { includeSignature: true, splitQuotedByDepth: split });
        const lines = text.split("\n");
        let at = 0;
        for (const line of r.reply_content.split("\n")) {
          if (line === "") continue;
          while (at < lines.length && lines[at]?.trim() !== line.trim()) at++;
          expect(at).toBeLessThan(lines.length);
          at++;
        }
        for (const s of r.segments) expect(s.content.trim()).not.toBe("");
      }),
      { numRuns: 300 },
    );
  });
  test("text with none of the markers is its own reply content", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (s) => {
        const text = s.replace(/[>\-_:：]/g, " ");
        const r = segmentText(text);
        if (r.segments.every((seg) => seg.kind === "reply_content"))
          expect(r.reply_content).toBe(text.trim());
      }),
      { numRuns: 300 },
    );
  });
  test("HTML built from the same pieces never throws", () => {
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 20 }), (lines) => {
        const html = lines.map((l, i) => (i % 3 === 0 ? `<blockquote>${l}` : `<div>${l}</div>`)).join("");
        expect(typeof segmentHtml(html).reply_content).toBe("string");
      }),
      { numRuns: 200 },
    );
  });
});
