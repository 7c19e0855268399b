/** `call.extract.reply_segments`: MailWebhook's arguments, defaults and result shape, through a mapper. */
import { describe, expect, test } from "bun:test";
import { compileMapper, validateMapperConfig } from "../index.ts";
import { extractReplySegments, MAX_SEGMENTS_PER_SOURCE } from "./extract-reply-segments.ts";

const TEXT =
  "Thanks for the update.\n\n-- \nAlice\n\nOn Mon, Jan 8, 2024 at 10:15 AM Bob <bob@example.com> wrote:\n> Status?\n>> On Sun, Ann wrote:\n>>> older\n";
const HTML =
  '<div>Thanks for the update.</div><div class="gmail_quote"><div class="gmail_attr">On Mon, Jan 8, 2024 at 10:15 AM Bob &lt;bob@example.com&gt; wrote:</div><blockquote class="gmail_quote">Status?</blockquote></div>';
const input = { message: { text: TEXT, html: HTML, subject: "Re: status" }, ctx: {} };

describe("call.extract.reply_segments", () => {
  test("the documented example: a mapper reads reply_content, has_quoted_content and filtered segments", () => {
    const mapper = compileMapper({
      version: "v1",
      vars: [
        {
          name: "reply_segments",
          expr: {
            "call.extract.reply_segments": {
              sources: ["text"],
              split_quoted_by_depth: true,
              include_signature: true,
            },
          },
        },
      ],
      output: {
        reply_text: { var: "vars.reply_segments.text.reply_content" },
        has_quoted_content: { var: "vars.reply_segments.text.has_quoted_content" },
        html: { var: "vars.reply_segments.html" },
        quoted_segments: {
          filter: {
            over: { var: "vars.reply_segments.text.segments" },
            as: "segment",
            where: { "==": [{ var: "segment.kind" }, "quoted_content"] },
          },
        },
        signature: {
          find: {
            over: { var: "vars.reply_segments.text.segments" },
            as: "segment",
            where: { "==": [{ var: "segment.kind" }, "signature"] },
          },
        },
      },
    });
    const out = mapper(input) as Record<string, unknown>;
    expect(out.reply_text).toBe("Thanks for the update.");
    expect(out.has_quoted_content).toBe(true);
    expect(out.html).toBeNull();
    expect(out.quoted_segments).toEqual([
      {
        kind: "quoted_content",
        depth: 1,
        content: "Status?",
        confidence: 1,
        detectors: ["plain.quote_prefix"],
        vendor: null,
      },
      {
        kind: "quoted_content",
        depth: 3,
        content: "older",
        confidence: 1,
        detectors: ["plain.quote_prefix"],
        vendor: null,
      },
    ]);
    expect(out.signature).toMatchObject({ kind: "signature", depth: 0, content: "-- \nAlice" });
  });

  test("defaults: both sources, no signature segments, quoted content not split", () => {
    const r = extractReplySegments({}, input);
    expect(r.text).toMatchObject({
      format: "text/plain",
      reply_content: "Thanks for the update.",
      has_quoted_content: true,
      max_depth: 3,
      detected_vendors: ["gmail"],
    });
    expect(r.text?.segments.map((s) => s.kind)).toEqual([
      "reply_content",
      "quoted_header",
      "quoted_content",
      "quoted_header",
      "quoted_content",
    ]);
    expect(r.html).toMatchObject({
      format: "text/html",
      reply_content: "Thanks for the update.",
      detected_vendors: ["gmail"],
    });
  });

  test("text and html arguments replace the message's bodies; a blank source is null", () => {
    const r = extractReplySegments({ text: "Only this.", html: "  " }, input);
    expect(r.text?.reply_content).toBe("Only this.");
    expect(r.html).toBeNull();
    expect(extractReplySegments({ sources: ["html"] }, input).text).toBeNull();
    expect(extractReplySegments({}, { message: {} })).toEqual({ text: null, html: null });
  });

  test("min_confidence, max_segments_per_source and max_input_chars_per_source", () => {
    expect(
      extractReplySegments({ min_confidence: 0.99, sources: ["text"] }, input).text?.segments.map(
        (s) => s.kind,
      ),
    ).toEqual(["reply_content", "quoted_content", "quoted_content"]);
    expect(extractReplySegments({ max_segments_per_source: 1 }, input).text?.segments.length).toBe(1);
    // Past the cap the quote is not read: the reply is the text up to it.
    const cut = extractReplySegments({ max_input_chars_per_source: 12, sources: ["text"] }, input);
    expect(cut.text?.reply_content).toBe("Thanks for t");
    // Out-of-range caps fall back to the hard maximum.
    const many = `Top\n${Array.from({ length: 1200 }, (_, i) => `${">".repeat((i % 2) + 1)} q${i}`).join("\n")}`;
    expect(
      extractReplySegments({ text: many, split_quoted_by_depth: true, max_segments_per_source: 1e9 }, {}).text
        ?.segments.length,
    ).toBe(MAX_SEGMENTS_PER_SOURCE);
  });

  test("the validator knows its arguments and their types", () => {
    expect(
      validateMapperConfig({
        version: "v1",
        output: { "call.extract.reply_segments": { include_signature: true } },
      }),
    ).toEqual({ ok: true });
    const bad = validateMapperConfig({
      version: "v1",
      output: { "call.extract.reply_segments": { include_signature: "yes" } },
    });
    expect(bad.ok).toBe(false);
    const unknown = validateMapperConfig({
      version: "v1",
      output: { "call.extract.reply_segments": { quotes: true } },
    });
    expect(unknown.ok).toBe(false);
  });
});
