/**
 * analyzeMessage over raw messages, parsed as ingest parses them: thread ids, reply text, forwarded
 * originals (inline and attached), and every kind of automated mail.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import type { NormalizedMessage } from "../../../services/lib/message.ts";
import { parseMessage } from "../../../services/mail/parse.ts";
import {
  analyzeMessage,
  MAX_ANALYZED_CHARS,
  understandingParts,
} from "../../../services/mail/understand/index.ts";
import { MAX_PART_BYTES } from "../../../services/mail/understand/parts.ts";
import { CORPUS_DIR, corpusEmailFiles, needsCorpus } from "../../support/paths.ts";
import { eml, PARSE_OPTIONS } from "../../support/raw-mail.ts";

async function analyze(raw: Uint8Array) {
  const { message } = await parseMessage(raw, PARSE_OPTIONS);
  return analyzeMessage(message, understandingParts(raw));
}

const head = (...extra: string[]) => [
  "From: Alice <alice@example.com>",
  "To: bob@example.org",
  "Subject: Re: Meeting",
  "Message-ID: <m3@example.com>",
  "Date: Mon, 08 Jan 2024 11:00:00 +0000",
  ...extra,
];

describe("thread_id", () => {
  test.each([
    [
      "the first id of References",
      ["References: <root@x.example> <m2@x.example>", "In-Reply-To: <m2@x.example>"],
      "<root@x.example>",
    ],
    [
      "References folded over lines",
      ["References:\r\n <root@x.example>\r\n <m2@x.example>"],
      "<root@x.example>",
    ],
    ["In-Reply-To without References", ["In-Reply-To: <m2@x.example>"], "<m2@x.example>"],
    [
      "In-Reply-To with text around the id",
      ['In-Reply-To: "Bob" <m2@x.example> (sent Monday)'],
      "<m2@x.example>",
    ],
    ["the message's own id otherwise", [], "<m3@example.com>"],
    ["References with no id in it", ["References: garbage"], "<m3@example.com>"],
  ])("%s", async (_name, extra, expected) => {
    const u = await analyze(eml(...head(...extra), "", "Hi"));
    expect(u.thread_id).toBe(expected);
  });
});

describe("reply_text and text_source", () => {
  test("of a body longer than the segmenter reads, reply_text is the part it read, trimmed", async () => {
    const line = "The quick brown fox jumps over the lazy dog.\n";
    const text = `\n  ${line.repeat(Math.ceil(2_100_000 / line.length))}`;
    const u = await analyzeMessage({
      message_id: "<long@example.com>",
      subject: "long",
      headers: {},
      from: [],
      text,
      html: "",
    });
    expect(u.text_source).toBe("text");
    expect(u.reply_text).toBe(text.trimStart().slice(0, MAX_ANALYZED_CHARS).trim());
    expect(u.reply_text.length).toBeLessThanOrEqual(MAX_ANALYZED_CHARS);
    expect(u.reply_text.startsWith("The quick brown fox")).toBe(true);
  });

  test("equals the trimmed text when nothing is quoted or signed", async () => {
    const u = await analyze(eml(...head(), "", "", "  Just new text.  ", "Second line.", ""));
    expect(u.reply_text).toBe("Just new text.  \nSecond line.");
    expect(u.text_source).toBe("text");
  });
  test("quote, signature and attribution removed from a Gmail-style reply", async () => {
    const u = await analyze(
      eml(
        ...head(),
        "",
        "Tuesday works.",
        "",
        "Sent from my iPhone",
        "",
        "On Mon, Jan 8, 2024 at 10:15 AM Bob <bob@example.org> wrote:",
        "> Can we meet?",
      ),
    );
    expect(u.reply_text).toBe("Tuesday works.");
  });
  test("HTML-only mail: the rules run on the HTML", async () => {
    const u = await analyze(
      eml(
        ...head("Content-Type: text/html; charset=utf-8"),
        "",
        '<div>Tuesday works.</div><div class="gmail_quote">On Mon, Bob wrote:<blockquote>Meet?</blockquote></div>',
      ),
    );
    expect(u.text_source).toBe("html");
    expect(u.reply_text).toBe("Tuesday works.");
  });
  test("a message without a body", async () => {
    const u = await analyze(eml(...head(), "", ""));
    expect(u).toMatchObject({ text_source: "none", reply_text: "", forwarded: null });
  });
  test("text_source set by the parse is kept, and its text is the reply when nothing is quoted", async () => {
    const { message } = await parseMessage(
      eml(...head("Content-Type: text/html"), "", "<p>Hello <b>you</b></p>"),
      PARSE_OPTIONS,
    );
    const derived = { ...message, text: "Hello **you**", text_source: "html" as const };
    const u = await analyzeMessage(derived);
    expect(u).toMatchObject({ text_source: "html", reply_text: "Hello **you**" });
  });
});

describe("forwarded", () => {
  test("Gmail's inline forward block", async () => {
    const u = await analyze(
      eml(
        ...head().map((l) => l.replace("Subject: Re: Meeting", "Subject: Fwd: Report")),
        "",
        "FYI",
        "",
        "---------- Forwarded message ---------",
        "From: Carol Jones <carol@example.net>",
        "Date: Mon, Jan 8, 2024 at 9:00 AM",
        "Subject: Report",
        "To: Alice <alice@example.com>, Dan <dan@example.com>",
        "Cc: <eve@example.com>",
        "",
        "",
        "Here is the report.",
      ),
    );
    expect(u.reply_text).toBe("FYI");
    expect(u.forwarded).toEqual({
      from: [{ email: "carol@example.net", name: "Carol Jones" }],
      to: [
        { email: "alice@example.com", name: "Alice" },
        { email: "dan@example.com", name: "Dan" },
      ],
      cc: [{ email: "eve@example.com", name: "" }],
      date: "2024-01-08T09:00:00Z",
      subject: "Report",
      message_id: null,
      text: "Here is the report.",
    });
  });
  test("Apple Mail's German forward block", async () => {
    const u = await analyze(
      eml(
        ...head(),
        "",
        "Anfang der weitergeleiteten Nachricht:",
        "",
        "Von: Carol <carol@example.net>",
        "Betreff: Bericht",
        "Datum: 8. Januar 2024 um 09:00:00 MEZ",
        "An: Alice <alice@example.com>",
        "",
        "Hier ist der Bericht.",
      ),
    );
    expect(u.forwarded).toMatchObject({
      from: [{ email: "carol@example.net", name: "Carol" }],
      subject: "Bericht",
      date: "2024-01-08T08:00:00Z",
      text: "Hier ist der Bericht.",
    });
    expect(u.reply_text).toBe("");
  });
  test("Outlook forwards with its reply header block; the Fw: subject tells them apart", async () => {
    const body = [
      "",
      "See below.",
      "",
      "________________________________",
      "From: Carol <carol@example.net>; on behalf of Ops",
      "Sent: Monday, January 8, 2024 9:00 AM",
      "To: Alice <alice@example.com>; Dan <dan@example.com>",
      "Subject: Outage",
      "",
      "The site is down.",
    ];
    const fw = await analyze(eml(...head().map((l) => l.replace("Re: Meeting", "FW: Outage")), ...body));
    expect(fw.forwarded).toMatchObject({
      from: [{ email: "carol@example.net", name: "Carol" }],
      to: [
        { email: "alice@example.com", name: "Alice" },
        { email: "dan@example.com", name: "Dan" },
      ],
      date: "2024-01-08T09:00:00Z",
      subject: "Outage",
      text: "The site is down.",
    });
    const re = await analyze(eml(...head(), ...body));
    expect(re.forwarded).toBeNull();
    expect(re.reply_text).toBe("See below.");
  });
  test("an encapsulated message without a filename: its text joins the body, and is the forward, not the reply", async () => {
    const u = await analyze(
      eml(
        ...head('Content-Type: multipart/mixed; boundary="b"'),
        "",
        "--b",
        "Content-Type: text/plain",
        "",
        "My note.",
        "--b",
        "Content-Type: message/rfc822",
        "",
        "From: Carol <carol@example.net>",
        "Subject: Original",
        "Date: Mon, 08 Jan 2024 09:00:00 +0000",
        "",
        "Original body.",
        "--b--",
      ),
    );
    expect(u.reply_text).toBe("My note.");
    expect(u.forwarded).toMatchObject({
      from: [{ email: "carol@example.net", name: "Carol" }],
      subject: "Original",
      date: "2024-01-08T09:00:00Z",
      text: "Original body.",
    });
  });
  test("an attached message/rfc822", async () => {
    const u = await analyze(
      eml(
        ...head('Content-Type: multipart/mixed; boundary="b"'),
        "",
        "--b",
        "Content-Type: text/plain",
        "",
        "Forwarding as attachment.",
        "--b",
        "Content-Type: message/rfc822",
        'Content-Disposition: attachment; filename="orig.eml"',
        "",
        "From: Carol <carol@example.net>",
        "To: Alice <alice@example.com>",
        "Cc: Dan <dan@example.com>",
        "Subject: Original",
        "Date: Mon, 08 Jan 2024 09:00:00 +0100",
        "Message-ID: <orig@example.net>",
        "",
        "Original body.",
        "--b--",
      ),
    );
    expect(u.reply_text).toBe("Forwarding as attachment.");
    expect(u.forwarded).toEqual({
      from: [{ email: "carol@example.net", name: "Carol" }],
      to: [{ email: "alice@example.com", name: "Alice" }],
      cc: [{ email: "dan@example.com", name: "Dan" }],
      date: "2024-01-08T08:00:00Z",
      subject: "Original",
      message_id: "<orig@example.net>",
      text: "Original body.",
    });
  });
});

test("a large attached message is read from its first MAX_PART_BYTES: headers and text, not its attachments", async () => {
  const filler = `${"x".repeat(998)}\r\n`.repeat(Math.ceil((MAX_PART_BYTES * 1.5) / 1000));
  const raw = eml(
    ...head('Content-Type: multipart/mixed; boundary="b"'),
    "",
    "--b",
    "Content-Type: text/plain",
    "",
    "See attached.",
    "--b",
    "Content-Type: message/rfc822",
    'Content-Disposition: attachment; filename="big.eml"',
    "",
    "From: Carol <carol@example.net>",
    "Subject: Big one",
    'Content-Type: multipart/mixed; boundary="c"',
    "",
    "--c",
    "Content-Type: text/plain",
    "",
    "Original text.",
    "--c",
    "Content-Type: application/octet-stream",
    "",
    filler,
    "--c--",
    "--b--",
  );
  const parts = understandingParts(raw);
  expect(parts.map((p) => [p.contentType, p.bytes.length])).toEqual([["message/rfc822", MAX_PART_BYTES]]);
  const { message } = await parseMessage(raw, PARSE_OPTIONS);
  const u = await analyzeMessage(message, parts);
  expect(u.forwarded).toMatchObject({ subject: "Big one", text: "Original text." });
});

const dsn = (action: string, status: string) =>
  eml(
    "From: Mail Delivery System <MAILER-DAEMON@mx.example.net>",
    "To: alice@example.com",
    "Subject: Undelivered Mail Returned to Sender",
    "Message-ID: <dsn1@mx.example.net>",
    "Auto-Submitted: auto-replied",
    'Content-Type: multipart/report; report-type=delivery-status; boundary="r"',
    "",
    "--r",
    "Content-Type: text/plain",
    "",
    "I'm sorry to have to inform you that your message could not be delivered.",
    "--r",
    "Content-Type: message/delivery-status",
    "",
    "Reporting-MTA: dns; mx.example.net",
    "Arrival-Date: Mon, 8 Jan 2024 10:00:00 +0000",
    "",
    "Final-Recipient: rfc822; ok@example.org",
    "Action: delivered",
    "Status: 2.0.0",
    "",
    "Final-Recipient: rfc822; nobody@example.org",
    "Original-Recipient: rfc822;nobody@example.org",
    `Action: ${action}`,
    `Status: ${status}`,
    "Diagnostic-Code: smtp; 550 5.1.1 <nobody@example.org>: Recipient address",
    "    rejected: User unknown",
    "",
    "--r",
    "Content-Type: text/rfc822-headers",
    "",
    "From: alice@example.com",
    "Message-ID: <sent1@example.com>",
    "Subject: Hello",
    "",
    "--r--",
  );

describe("auto", () => {
  test("a DSN reporting failure is a bounce with the failed recipient's facts", async () => {
    const u = await analyze(dsn("failed", "5.1.1"));
    expect(u.auto).toEqual({
      kind: "bounce",
      auto_submitted: "auto-replied",
      list_id: null,
      dsn: {
        action: "failed",
        status: "5.1.1",
        final_recipient: "nobody@example.org",
        diagnostic_code: "550 5.1.1 <nobody@example.org>: Recipient address rejected: User unknown",
        original_message_id: "<sent1@example.com>",
      },
    });
    expect(u.forwarded).toBeNull();
  });
  test("a DSN reporting delay is a delivery report about the first recipient", async () => {
    const u = await analyze(dsn("delayed", "4.4.1"));
    expect(u.auto.kind).toBe("delivery_report");
    expect(u.auto.dsn).toMatchObject({ action: "delivered", final_recipient: "ok@example.org" });
  });
  test("an RFC 8098 read receipt", async () => {
    const raw = eml(
      ...head('Content-Type: multipart/report; report-type=disposition-notification; boundary="r"'),
      "",
      "--r",
      "Content-Type: text/plain",
      "",
      "Your message was displayed.",
      "--r",
      "Content-Type: message/disposition-notification",
      "",
      "Final-Recipient: rfc822; bob@example.org",
      "Disposition: manual-action/MDN-sent-manually; displayed",
      "--r--",
    );
    expect((await analyze(raw)).auto.kind).toBe("read_receipt");
  });
  test.each([
    ["Auto-Submitted: auto-replied (RFC 3834)", ["Auto-Submitted: auto-replied"], "auto_reply"],
    ["X-Autoreply", ["X-Autoreply: yes"], "auto_reply"],
    ["X-Autorespond", ["X-Autorespond: vacation"], "auto_reply"],
    ["Precedence: auto_reply", ["Precedence: auto_reply"], "auto_reply"],
    ["Exchange's inbox-rules loop marker", ["X-MS-Exchange-Inbox-Rules-Loop: bob@example.org"], "auto_reply"],
    [
      "Exchange's generated-message source",
      ["X-MS-Exchange-Generated-Message-Source: Mailbox Rules Agent"],
      "auto_reply",
    ],
    [
      "an out-of-office subject on auto-generated mail",
      ["Auto-Submitted: auto-generated", "Subject: Automatic reply: Meeting"],
      "auto_reply",
    ],
    ["List-Id", ["List-Id: Dev list <dev.lists.example.org>"], "list"],
    ["List-Unsubscribe", ["List-Unsubscribe: <mailto:leave@lists.example.org>"], "list"],
    ["Precedence: bulk", ["Precedence: bulk"], "list"],
    ["Precedence: list", ["Precedence: list"], "list"],
    ["Auto-Submitted: auto-generated", ["Auto-Submitted: auto-generated"], "auto_generated"],
    ["Auto-Submitted: auto-notified", ["Auto-Submitted: auto-notified"], "auto_generated"],
    ["Auto-Submitted: no", ["Auto-Submitted: no"], "none"],
    ["X-Autoreply: no", ["X-Autoreply: no"], "none"],
    ["mail a person wrote", [], "none"],
  ])("%s", async (_name, extra, kind) => {
    const subject = extra.find((h) => h.startsWith("Subject:"));
    const lines = head(...extra.filter((h) => !h.startsWith("Subject:")));
    const raw = eml(
      ...(subject ? lines.map((l) => (l.startsWith("Subject:") ? subject : l)) : lines),
      "",
      "Hi",
    );
    const u = await analyze(raw);
    expect(u.auto.kind as string).toBe(kind);
    expect(u.auto.dsn).toBeNull();
  });
  test("auto_submitted and list_id report the header values whatever the kind", async () => {
    const u = await analyze(
      eml(...head("Auto-Submitted: auto-replied", "List-Id: <dev.lists.example.org>"), "", "x"),
    );
    expect(u.auto).toEqual({
      kind: "auto_reply",
      auto_submitted: "auto-replied",
      list_id: "<dev.lists.example.org>",
      dsn: null,
    });
  });
  test("a bounce without an RFC 3464 report is known by its sender and subject", async () => {
    const raw = eml(
      "From: MAILER-DAEMON@mx.example.net",
      "To: alice@example.com",
      "Subject: failure notice",
      "",
      "Sorry, I couldn't deliver your message.",
    );
    expect((await analyze(raw)).auto).toMatchObject({ kind: "bounce", dsn: null });
  });
});

describe("failures", () => {
  test("an analysis that throws yields its empty result and is reported; analyzeMessage resolves", async () => {
    const { message } = await parseMessage(eml(...head(), "", "Hello"), PARSE_OPTIONS);
    const hostile = {
      ...message,
      get headers(): Record<string, string> {
        throw new Error("boom");
      },
    } as unknown as NormalizedMessage;
    const errors: string[] = [];
    const u = await analyzeMessage(hostile, [], { onError: (what) => errors.push(what) });
    expect(u).toEqual({
      thread_id: "<m3@example.com>",
      reply_text: "Hello",
      text_source: "text",
      forwarded: null,
      auto: { kind: "none", auto_submitted: null, list_id: null, dsn: null },
    });
    expect(errors).toEqual(["thread", "auto"]);
  });
  test("an empty attached message forwards nothing and is no failure", async () => {
    const errors: string[] = [];
    const { message } = await parseMessage(eml(...head(), "", "Hello"), PARSE_OPTIONS);
    const u = await analyzeMessage(message, [{ contentType: "message/rfc822", bytes: new Uint8Array() }], {
      onError: (what) => errors.push(what),
    });
    expect(u.forwarded).toBeNull();
    expect(errors).toEqual([]);
  });
});

describe.skipIf(!CORPUS_DIR)(needsCorpus("the third-party corpus"), () => {
  test("every corpus message is analysed without a failed analysis, and reply_text is part of its body", async () => {
    const failures: string[] = [];
    let analysed = 0;
    for (const file of corpusEmailFiles()) {
      const raw = readFileSync(file);
      let message: NormalizedMessage;
      try {
        ({ message } = await parseMessage(raw, PARSE_OPTIONS));
      } catch {
        continue;
      }
      const u = await analyzeMessage(message, understandingParts(raw), {
        onError: (what, error) => failures.push(`${file}: ${what}: ${String(error)}`),
      });
      analysed++;
      // The new content is cut from the body, never invented: each of its lines is a line of the body.
      if (u.text_source === "text") {
        const body = new Set(message.text.split(/\r?\n/).map((l) => l.trim()));
        for (const line of u.reply_text.split(/\r?\n/))
          if (!body.has(line.trim())) failures.push(`${file}: ${line}`);
      }
      expect(u.thread_id).toMatch(/^<.+>$/);
    }
    expect(failures).toEqual([]);
    expect(analysed).toBeGreaterThan(300);
  }, 60_000);
  const corpus = (path: string) => readFileSync(`${CORPUS_DIR}/emails/${path}`);
  test("postal-mime's bounce fixture", async () => {
    const u = await analyze(corpus("postal-mime/test__fixtures__bounce.eml"));
    expect(u.auto).toMatchObject({
      kind: "bounce",
      dsn: {
        action: "failed",
        status: "5.0.0",
        final_recipient: "htfgvhyufthdgcvhgjyfthgc@ethereal.email",
        diagnostic_code: "550 No such user here",
        original_message_id: "<e85f1c9b-9b51-4028-8ec0-0a657155028e@app.fastmail.com>",
      },
    });
  });
  test("ruby-mail's delayed-delivery report", async () => {
    const u = await analyze(
      corpus("ruby-mail/spec__fixtures__emails__multipart_report_emails__report_422.eml"),
    );
    expect(u.auto).toMatchObject({ kind: "delivery_report", dsn: { action: "delayed", status: "4.2.2" } });
  });
  test("an Italian Outlook reply over an Apple Mail forward (spamscope's mail_test_7)", async () => {
    const u = await analyze(corpus("spamscope-mail-parser/tests__mails__mail_test_7"));
    expect(
      u.reply_text.startsWith("Ciao sere mi puoi dire se il mio cliente deve fare questa dichiarazione?"),
    ).toBe(true);
    expect(u.reply_text).not.toContain("Inviato:");
    expect(u.forwarded).toMatchObject({ from: [{ email: "export@agade.info" }], subject: "Ordine" });
  });
  test("an attached message/rfc822 (ruby-mail)", async () => {
    const u = await analyze(
      corpus("ruby-mail/spec__fixtures__emails__attachment_emails__attachment_message_rfc822.eml"),
    );
    expect(u.forwarded?.from[0]?.name).toBe("Test Tester");
  });
});
