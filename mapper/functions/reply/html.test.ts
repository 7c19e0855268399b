/** Reply segmentation of HTML bodies: each client's quote markup, and the text rules on the rest. */
import { describe, expect, test } from "bun:test";
import { segmentHtml } from "./index.ts";

const summary = (html: string) => {
  const r = segmentHtml(html, { includeSignature: true });
  return { reply: r.reply_content, kinds: r.segments.map((s) => s.kind), vendors: r.detected_vendors };
};

describe("quote markup of each client", () => {
  test("Gmail: gmail_quote with its attribution and blockquote; gmail_signature", () => {
    const html = `<div dir="ltr">Tuesday works.<div><br></div><div>Best,</div><div>Alice</div><div><br></div>-- <br><div dir="ltr" class="gmail_signature">Alice Smith<br>ACME</div></div><br><div class="gmail_quote"><div dir="ltr" class="gmail_attr">On Mon, Jan 8, 2024 at 10:15 AM Bob &lt;<a href="mailto:bob@example.com">bob@example.com</a>&gt; wrote:<br></div><blockquote class="gmail_quote" style="margin:0px 0px 0px 0.8ex;border-left:1px solid rgb(204,204,204);padding-left:1ex"><div dir="ltr">Can we meet?<br></div></blockquote></div>`;
    expect(summary(html)).toEqual({
      reply: "Tuesday works.",
      kinds: ["reply_content", "signature", "quoted_header", "quoted_content"],
      vendors: ["gmail"],
    });
  });

  test("Gmail forward inside gmail_quote", () => {
    const html = `<div dir="ltr">FYI<br><br><div class="gmail_quote"><div dir="ltr" class="gmail_attr">---------- Forwarded message ---------<br>From: <strong class="gmail_sendername" dir="auto">Carol</strong> <span dir="auto">&lt;<a href="mailto:carol@example.com">carol@example.com</a>&gt;</span><br>Date: Mon, Jan 8, 2024 at 9:00 AM<br>Subject: Report<br>To: &lt;<a href="mailto:alice@example.com">alice@example.com</a>&gt;<br></div><br><br><div dir="ltr">Here is the report.</div></div></div>`;
    const r = segmentHtml(html);
    expect(r.reply_content).toBe("FYI");
    expect(r.segments.map((s) => s.kind)).toEqual(["reply_content", "forwarded_header", "forwarded_content"]);
    expect(r.segments[2]?.content).toBe("Here is the report.");
  });

  test("Outlook desktop: the divider div with its border, then the header block, no blockquote", () => {
    const html = `<html><head><style>p{margin:0}</style></head><body><div class="WordSection1"><p class="MsoNormal">Tuesday works.<o:p></o:p></p><p class="MsoNormal"><o:p>&nbsp;</o:p></p><div style="border:none;border-top:solid #E1E1E1 1.0pt;padding:3.0pt 0cm 0cm 0cm"><p class="MsoNormal"><b>From:</b> Bob Jones &lt;bob@example.com&gt; <br><b>Sent:</b> Monday, January 8, 2024 10:15 AM<br><b>To:</b> Alice &lt;alice@example.com&gt;<br><b>Subject:</b> Meeting<o:p></o:p></p></div><p class="MsoNormal"><o:p>&nbsp;</o:p></p><p class="MsoNormal">Can we meet?<o:p></o:p></p></div></body></html>`;
    expect(summary(html)).toEqual({
      reply: "Tuesday works.",
      kinds: ["reply_content", "quoted_header", "quoted_content"],
      vendors: ["outlook"],
    });
  });

  test("Outlook web and mobile: divRplyFwdMsg after an hr, German headers; the Signature div", () => {
    const html = `<div dir="ltr">Passt.</div><div id="Signature"><div>Get Outlook for iOS</div></div><hr style="display:inline-block;width:98%" tabindex="-1"><div id="divRplyFwdMsg" dir="ltr"><font face="Calibri, sans-serif" style="font-size:11pt"><b>Von:</b> Bob Jones &lt;bob@example.com&gt;<br><b>Gesendet:</b> Montag, 8. Januar 2024 10:15<br><b>An:</b> Alice<br><b>Betreff:</b> Treffen</font><div>&nbsp;</div></div><div>Dienstag?</div>`;
    expect(summary(html)).toEqual({
      reply: "Passt.",
      kinds: ["reply_content", "signature", "quoted_header", "quoted_content"],
      vendors: ["outlook"],
    });
  });

  test("Apple Mail: blockquote type=cite after the attribution", () => {
    const html = `<html><body dir="auto">Tuesday works.<br><br><div dir="ltr">Envoyé de mon iPhone</div><div dir="ltr"><br><blockquote type="cite">Le 8 janv. 2024 à 10:15, Bob Jones &lt;bob@example.com&gt; a écrit&nbsp;:<br><br></blockquote></div><blockquote type="cite"><div dir="ltr">Can we meet?</div></blockquote></body></html>`;
    const r = summary(html);
    expect(r.reply).toBe("Tuesday works.");
    expect(r.kinds).toEqual(["reply_content", "signature", "quoted_content"]);
  });

  test("Thunderbird: moz-cite-prefix and blockquote", () => {
    const html = `<p>Tuesday works.</p><div class="moz-signature">-- <br>Alice</div><div class="moz-cite-prefix">On 1/8/24 10:15 AM, Bob Jones wrote:<br></div><blockquote type="cite" cite="mid:x@example.com">Can we meet?</blockquote>`;
    expect(summary(html)).toEqual({
      reply: "Tuesday works.",
      kinds: ["reply_content", "signature", "quoted_header", "quoted_content"],
      vendors: ["thunderbird"],
    });
  });

  test("Yahoo: yahoo_quoted", () => {
    const html = `<div class="ydp1"><div>Tuesday works.</div></div><div id="yahoo_quoted_123" class="yahoo_quoted"><div style="font-family:Helvetica"><div>On Monday, January 8, 2024, 10:15:00 AM GMT+1, Bob Jones &lt;bob@example.com&gt; wrote:</div><div><br></div><div>Can we meet?</div></div></div>`;
    expect(summary(html)).toEqual({
      reply: "Tuesday works.",
      kinds: ["reply_content", "quoted_header", "quoted_content"],
      vendors: ["yahoo"],
    });
  });

  test("a quote container with no header text is history all the same", () => {
    const html = `<p>Ok.</p><div class="gmail_quote"><p>Older text without any attribution.</p></div><p>Also older.</p>`;
    const r = segmentHtml(html);
    expect(r.reply_content).toBe("Ok.");
    expect(r.segments.map((s) => [s.kind, s.detectors])).toEqual([
      ["reply_content", ["plain.leading_unquoted"]],
      ["quoted_content", ["html.gmail_quote"]],
    ]);
  });
});

describe("HTML as text", () => {
  test("no markup of a client: the text rules run on the text the HTML shows", () => {
    const html = `<p>Sure.</p><p>On Mon, Jan 8, 2024 at 10:15 AM Bob &lt;bob@example.com&gt; wrote:</p><p>&gt; Lunch?</p>`;
    const r = segmentHtml(html);
    expect(r.reply_content).toBe("Sure.");
    expect(r.segments.map((s) => s.kind)).toEqual(["reply_content", "quoted_header", "quoted_content"]);
  });
  test("style, script and head are not text; entities are decoded; pre keeps its lines", () => {
    const html = `<head><title>T</title><style>.a{}</style></head><script>x()</script><p>A &amp; B&nbsp;C</p><pre>line 1\n  line 2</pre>`;
    expect(segmentHtml(html).reply_content).toBe("A & B C\n\nline 1\n  line 2");
  });
  test("an inline reply in nested blockquotes keeps its lines in order", () => {
    const html = `<div>On Mon, Bob wrote:</div><blockquote>Q1?</blockquote><div>A1.</div><blockquote>Q2?</blockquote><div>A2.</div>`;
    expect(segmentHtml(html).reply_content).toBe("A1.\n\nA2.");
  });
});
