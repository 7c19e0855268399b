/**
 * Shapes that make backtracking or recursive code blow up: megabyte-long lines, ten thousand quote
 * levels, ten thousand nested blockquotes. The results are checked; that they come back at all within
 * the test timeout is the other half (tools/bench/understand.ts measures the time).
 */
import { describe, expect, test } from "bun:test";
import { segmentHtml, segmentText } from "./index.ts";
import { MAX_LINES } from "./lines.ts";

const MB = 1024 * 1024;

describe("hostile shapes", () => {
  test("a megabyte-long line of almost-markers is content", () => {
    for (const unit of ["On ", "From: ", "> ", "-", "Sent from my ", "wrote:", "a@b ", "2024年"]) {
      const line = unit.repeat(Math.ceil(MB / unit.length));
      const r = segmentText(`Hello\n${line}\nBye`);
      expect(r.segments.length).toBeGreaterThan(0);
    }
    const long = "x".repeat(MB);
    expect(segmentText(long).reply_content).toBe(long);
  });

  test("10,000 quote levels, with and without spaces between the marks", () => {
    for (const mark of [">", "> "]) {
      const text = `Top\n${mark.repeat(10_000)}deep\n`;
      const r = segmentText(text, { splitQuotedByDepth: true });
      expect(r.reply_content).toBe("Top");
      expect(r.max_depth).toBe(10_000);
      expect(r.segments.at(-1)).toMatchObject({ kind: "quoted_content", depth: 10_000, content: "deep" });
    }
  });

  test("2,000 lines each one level deeper (a staircase) are one segment per level when split", () => {
    let text = "New\n";
    for (let d = 1; d <= 2_000; d++) text += `${">".repeat(d)} level ${d}\n`;
    const r = segmentText(text, { splitQuotedByDepth: true, maxSegments: 5_000 });
    expect(r.segments.length).toBe(2_001);
    expect(segmentText(text).segments.length).toBe(2);
  });

  test("10,000 nested blockquotes", () => {
    const html = `<p>Top</p>${"<blockquote>".repeat(10_000)}deep${"</blockquote>".repeat(10_000)}`;
    const r = segmentHtml(html, { splitQuotedByDepth: true });
    expect(r.reply_content).toBe("Top");
    expect(r.max_depth).toBe(10_000);
    // Unclosed, as a truncated message would have them.
    expect(segmentHtml(`<p>Top</p>${"<blockquote><div>x".repeat(10_000)}`).reply_content).toBe("Top");
  });

  test("many short lines that each look like the start of a header", () => {
    const text = "On Monday we\n".repeat(50_000) + "From: a\n".repeat(50_000);
    const r = segmentText(text);
    expect(r.has_quoted_content).toBe(false);
    expect(r.reply_content).toBe(text.trim());
  });

  test("a body of more lines than MAX_LINES: the rest is one last line, kept whole", () => {
    const text = `New.\n\nOn Mon, Bob wrote:\n${"> q\n".repeat(MAX_LINES)}tail`;
    const r = segmentText(text);
    expect(r.reply_content).toBe("New.");
    const plain = "a\n".repeat(MAX_LINES * 2);
    expect(segmentText(plain).reply_content).toBe(plain.trim());
    expect(segmentText("\n".repeat(MAX_LINES * 20)).reply_content).toBe("");
    const html = `<p>Top</p>${"<div>x</div>".repeat(MAX_LINES + 10)}`;
    expect(segmentHtml(html).reply_content.split("\n").length).toBeGreaterThan(MAX_LINES);
  });
});
