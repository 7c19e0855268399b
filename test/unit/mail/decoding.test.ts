// Decoding fidelity: raw 8-bit headers, damaged MIME structure, where `text` comes from, and the
// report parts of bounces and read receipts.
import { describe, expect, test } from "bun:test";
import { parseDeliveryStatus } from "../../../services/mail/delivery-status.ts";
import { decodeCharset } from "../../../services/mail/mime/charset.ts";
import { unwrapFlowed } from "../../../services/mail/mime/flowed.ts";
import { decodeWords } from "../../../services/mail/mime/words.ts";
import { parseMessage } from "../../../services/mail/parse.ts";
import { eml, PARSE_OPTIONS, sha256 } from "../../support/raw-mail.ts";

const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);
/** Bytes of a Latin-1 string, one byte per character (a legacy 8-bit message). */
const latin1 = (text: string): Uint8Array => Uint8Array.from(text, (c) => c.charCodeAt(0));
const join = (...parts: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};
const parse = (raw: Uint8Array) => parseMessage(raw, PARSE_OPTIONS);
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

describe("raw 8-bit header bytes (RFC 6532)", () => {
  test("reads UTF-8 subjects, display names and filenames as UTF-8", async () => {
    const { message, attachments } = await parse(
      eml(
        "From: Jörg Müller <jorg@example.com>",
        "To: Zoë <zoe@example.com>",
        "Subject: Grüße — 日本語 🎉",
        'Content-Type: multipart/mixed; boundary="b"',
        "",
        "--b",
        "Content-Type: text/plain; charset=utf-8",
        "",
        "body",
        "--b",
        'Content-Type: application/pdf; name="Счёт №5.pdf"',
        "Content-Disposition: attachment",
        "",
        "%PDF-1.4",
        "--b--",
      ),
    );
    expect(message.subject).toBe("Grüße — 日本語 🎉");
    expect(message.from).toEqual([{ email: "jorg@example.com", name: "Jörg Müller" }]);
    expect(message.to).toEqual([{ email: "zoe@example.com", name: "Zoë" }]);
    expect(attachments.map((a) => a.descriptor.filename)).toEqual(["Счёт №5.pdf"]);
  });

  test("falls back to Windows-1252 per line, so one Latin-1 header does not garble a UTF-8 one", async () => {
    const raw = join(
      latin1("From: Andr\xe9 <andre@example.com>\r\nSubject: Caf\xe9 cr\xe8me \x80 5\r\n"),
      utf8("To: Zoë <zoe@example.com>\r\nContent-Type: text/plain\r\n\r\nhi\r\n"),
    );
    const { message } = await parse(raw);
    expect(message.subject).toBe("Café crème € 5");
    expect(message.from[0]?.name).toBe("André");
    expect(message.to[0]?.name).toBe("Zoë");
  });
});

describe("RFC 2047 encoded words", () => {
  test.each([
    ["one word", "=?UTF-8?Q?Gr=C3=BC=C3=9Fe?=", "Grüße"],
    ["text around words", "Re: =?ISO-8859-1?Q?caf=E9?= now", "Re: café now"],
    [
      "whitespace between words is dropped",
      "=?UTF-8?B?TXlTdXJ2ZXk=?=\r\n =?UTF-8?B?LmNvbSAmIEM=?=",
      "MySurvey.com & C",
    ],
    ["a character split across two words", "=?UTF-8?Q?=C3?= =?UTF-8?Q?=A9?=", "é"],
    ["two charsets side by side", "=?ISO-8859-1?B?SWYgeW8=?= =?ISO-8859-2?B?dSByZWFk?=", "If you read"],
    ["a language suffix", "=?UTF-8*en?Q?hi?=", "hi"],
    ["an unknown charset", "=?x-unknown?Q?plain?=", "plain"],
    [
      "stateful words decoded one by one",
      "=?ISO-2022-JP?B?GyRCJUYlOSVIGyhC?= =?ISO-2022-JP?B?GyRCJUYlOSVIGyhC?=",
      "テストテスト",
    ],
    ["no words", "plain = ? text", "plain = ? text"],
  ])("decodes %s", (_label, value, expected) => {
    expect(decodeWords(value)).toBe(expected);
  });
});

describe("text bodies", () => {
  test.each([
    ["no charset, valid UTF-8", undefined, utf8("naïve café"), "naïve café"],
    ["no charset, Latin-1 bytes", undefined, latin1("na\xefve caf\xe9"), "naïve café"],
    ["declared UTF-8 but Latin-1", "utf-8", latin1("caf\xe9 \x80"), "café €"],
    [
      "UTF-8 with one broken byte stays UTF-8",
      "utf-8",
      join(utf8("Профиль "), latin1("\xff")),
      "Профиль \ufffd",
    ],
    ["a vendor label", "cp932", Uint8Array.of(0x82, 0xa0), "あ"],
    ["an x- label", "x-sjis", Uint8Array.of(0x82, 0xa0), "あ"],
    ["an unknown label", "x-unknown-42", utf8("plain"), "plain"],
  ])("decodes %s", (_label, charset, bytes, expected) => {
    expect(decodeCharset(bytes, charset)).toBe(expected);
  });

  test("unwraps format=flowed, with delsp and quote depth (RFC 3676)", () => {
    expect(unwrapFlowed("This is \r\n flowed\r\nhard\r\n-- \r\nsig", false)).toBe(
      "This is flowed\nhard\n-- \nsig",
    );
    expect(unwrapFlowed("Lo \r\nng", true)).toBe("Long");
    expect(unwrapFlowed("> quoted \r\n> more\r\nnew", false)).toBe("> quoted more\nnew");
  });

  test.each([
    [
      "a text body",
      ["Content-Type: text/plain; charset=utf-8", "", "Hello there."],
      { text: "Hello there.", text_source: "text" },
    ],
    [
      "only an HTML body",
      [
        "Content-Type: text/html; charset=utf-8",
        "",
        "<p>Hi <b>Ann</b>,</p><p>see <a href='https://x.test/a'>this</a></p>",
      ],
      { text: "Hi Ann,\n\nsee this [https://x.test/a]", text_source: "html" },
    ],
    [
      "an empty text part beside the HTML",
      [
        'Content-Type: multipart/alternative; boundary="a"',
        "",
        "--a",
        "Content-Type: text/plain",
        "",
        "",
        "--a",
        "Content-Type: text/html",
        "",
        "<div>Only here</div>",
        "--a--",
      ],
      { text: "Only here", text_source: "html" },
    ],
    [
      "no body at all",
      [
        'Content-Type: multipart/mixed; boundary="m"',
        "",
        "--m",
        "Content-Type: application/pdf",
        "Content-Disposition: attachment; filename=a.pdf",
        "",
        "%PDF",
        "--m--",
      ],
      { text: "", text_source: "none" },
    ],
  ])("sets text and text_source for %s", async (_label, lines, expected) => {
    const { message } = await parse(eml("From: a@example.com", ...lines, ""));
    expect({ text: message.text.trim(), text_source: message.text_source as string }).toEqual(expected);
  });

  test("opens an inline forwarded message under a header block", async () => {
    const { message } = await parse(
      eml(
        'Content-Type: multipart/mixed; boundary="m"',
        "",
        "--m",
        "Content-Type: text/plain",
        "",
        "See below.",
        "--m",
        "Content-Type: message/rfc822",
        "",
        "From: Ann <ann@example.com>",
        "To: bob@example.com",
        "Subject: Original",
        "Date: Mon, 6 May 2024 09:08:07 -0700",
        "",
        "The original text.",
        "--m--",
      ),
    );
    expect(message.text).toContain("See below.");
    expect(message.text).toContain(
      "From:    Ann <ann@example.com>\nSubject: Original\nDate:    2024-05-06T16:08:07Z",
    );
    expect(message.text).toContain("The original text.");
  });
});

test("opens a message/global part (RFC 6532) like a forwarded message, its raw UTF-8 header included", async () => {
  const { message } = await parse(
    eml(
      'Content-Type: multipart/mixed; boundary="m"',
      "",
      "--m",
      "Content-Type: text/plain",
      "",
      "FYI",
      "--m",
      "Content-Type: message/global",
      "",
      "From: Zoë <zoe@example.com>",
      "Subject: Über alles",
      "",
      "Inhalt",
      "--m--",
    ),
  );
  expect(message.text).toContain("From:    Zoë <zoe@example.com>\nSubject: Über alles");
  expect(message.text).toContain("Inhalt");
});

describe("damaged structure", () => {
  test("reads a multipart with an unknown subtype as multipart/mixed and keeps its attachments", async () => {
    const image = (n: number): string[] => [
      "--u",
      "Content-Type: image/png",
      `Content-Disposition: attachment; filename="p${n}.png"`,
      "Content-Transfer-Encoding: base64",
      "",
      PNG,
    ];
    const { message, attachments } = await parse(
      eml(
        'Content-Type: multipart/x-vendor-bundle; boundary="u"',
        "",
        "--u",
        "Content-Type: text/plain",
        "",
        "three pictures",
        ...image(1),
        ...image(2),
        ...image(3),
        "--u--",
      ),
    );
    expect(message.text.trim()).toBe("three pictures");
    expect(attachments.map((a) => a.descriptor.filename)).toEqual(["p1.png", "p2.png", "p3.png"]);
  });

  test.each([
    ["a type whose slash became a dash", "application-x-gzip", "application/x-gzip"],
    ["a type whose slash became an underscore", "image_png", "image/png"],
    ["an invalid type on a named part", "garbage", "application/octet-stream"],
  ])("tolerates %s", async (_label, declared, expected) => {
    const { message, attachments } = await parse(
      eml(
        'Content-Type: multipart/mixed; boundary="m"',
        "",
        "--m",
        "Content-Type: text/plain",
        "",
        "body",
        "--m",
        `Content-Type: ${declared}; name="file.gz"`,
        "Content-Transfer-Encoding: base64",
        "",
        "H4sIAAAAAAAAA0tMSgYAJrLJNQMAAAA=",
        "--m--",
      ),
    );
    expect(message.text.trim()).toBe("body");
    expect(attachments.map((a) => a.descriptor.content_type)).toEqual([expected]);
  });

  test("keeps the attachment after a nested multipart that reuses its parent's boundary", async () => {
    const { message, attachments } = await parse(
      eml(
        'Content-Type: multipart/mixed; boundary="same"',
        "",
        "--same",
        'Content-Type: multipart/alternative; boundary="same"',
        "",
        "--same",
        "Content-Type: text/plain",
        "",
        "plain version",
        "--same",
        "Content-Type: text/html",
        "",
        "<p>html version</p>",
        "--same--",
        "",
        "--same",
        'Content-Type: application/zip; name="a.zip"',
        "Content-Transfer-Encoding: base64",
        "",
        "UEsFBgAAAAAAAAAAAAAAAAAAAAAAAA==",
        "--same--",
      ),
    );
    expect(message.text.trim()).toBe("plain version");
    expect(message.html).toContain("html version");
    expect(attachments.map((a) => [a.descriptor.id, a.descriptor.filename])).toEqual([["att_2", "a.zip"]]);
  });
});

describe("bounces and read receipts", () => {
  const bounce = eml(
    "From: MAILER-DAEMON@mx.example.net",
    "To: sender@example.com",
    "Subject: Undelivered Mail Returned to Sender",
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
    "Arrival-Date: Mon, 6 May 2024 09:08:07 -0700",
    "",
    "Final-Recipient: rfc822; gone@example.org",
    "Action: failed",
    "Status: 5.1.1",
    "Diagnostic-Code: smtp; 550 5.1.1 <gone@example.org>:",
    "  Recipient address rejected: User unknown",
    "",
    "Final-Recipient: rfc822; slow@example.org",
    "Action: delayed",
    "Status: 4.4.1",
    "",
    "--r",
    "Content-Type: message/rfc822",
    "",
    "From: sender@example.com",
    "Message-ID: <original@example.com>",
    "Subject: hello",
    "",
    "the original",
    "--r--",
    "",
  );

  test("delivers the delivery-status text in the body and does not open the returned original", async () => {
    const { message, attachments } = await parse(bounce);
    expect(message.text).toContain("could not be delivered");
    expect(message.text).toContain("Action: failed");
    expect(message.text).not.toContain("the original");
    expect(message.text_source).toBe("text");
    expect(attachments).toEqual([]);
  });

  test("reads the per-message and per-recipient fields of the report", async () => {
    const { reports } = await parse(bounce);
    expect(reports).toEqual([
      {
        content_type: "message/delivery-status",
        part_path: "2",
        message: { "reporting-mta": "dns; mx.example.net", "arrival-date": "Mon, 6 May 2024 09:08:07 -0700" },
        recipients: [
          {
            "final-recipient": "rfc822; gone@example.org",
            action: "failed",
            status: "5.1.1",
            "diagnostic-code": "smtp; 550 5.1.1 <gone@example.org>: Recipient address rejected: User unknown",
          },
          { "final-recipient": "rfc822; slow@example.org", action: "delayed", status: "4.4.1" },
        ],
        original_message_id: "<original@example.com>",
      },
    ]);
  });

  test("reads a read receipt (RFC 8098) and gives its text", async () => {
    const { message, reports } = await parse(
      eml(
        "From: reader@example.org",
        'Content-Type: multipart/report; report-type=disposition-notification; boundary="n"',
        "",
        "--n",
        "Content-Type: message/disposition-notification",
        "",
        "Reporting-UA: mail.example.org; Webmail",
        "Final-Recipient: rfc822; reader@example.org",
        "Original-Message-ID: <m1@example.com>",
        "Disposition: manual-action/MDN-sent-manually; displayed",
        "",
        "--n--",
      ),
    );
    expect(message.text).toContain("Disposition: manual-action/MDN-sent-manually; displayed");
    expect(message.text_source).toBe("text");
    expect(reports[0]?.message.disposition).toBe("manual-action/MDN-sent-manually; displayed");
    expect(reports[0]?.recipients).toEqual([]);
  });

  test.each([
    ["no fields", "", { message: {}, recipients: [] }],
    ["junk lines", "not a field\n: no name\n", { message: {}, recipients: [] }],
    [
      "a repeated field keeps the first",
      "Action: failed\nAction: delivered",
      { message: { action: "failed" }, recipients: [] },
    ],
    [
      "a __proto__ field stays a plain key",
      "__proto__: x",
      { message: { ["__proto__"]: "x" }, recipients: [] },
    ],
  ])("parseDeliveryStatus reads %s", (_label, text, expected) => {
    const parsed = parseDeliveryStatus(text);
    expect(JSON.stringify(parsed)).toBe(JSON.stringify(expected));
  });
});

test("the attachment bytes of a parsed message are exact", async () => {
  const { attachments } = await parse(
    eml(
      'Content-Type: multipart/mixed; boundary="m"',
      "",
      "--m",
      "Content-Type: text/plain; name=notes.txt",
      "Content-Disposition: attachment",
      "",
      "line 1",
      "line 2",
      "--m--",
    ),
  );
  expect(attachments[0]?.descriptor.sha256).toBe(sha256(utf8("line 1\r\nline 2")));
});
