import { describe, expect, test } from "bun:test";
import { MessageParseError, parseDateHeader, parseMessage } from "../../../services/mail/parse.ts";
import { emailFixture, eml, PARSE_OPTIONS } from "../../support/raw-mail.ts";

const plain = (...headers: string[]): Uint8Array =>
  eml(...headers, "Content-Type: text/plain; charset=utf-8", "", "Hello.", "");

describe("parseMessage headers", () => {
  test.each([
    ["=?UTF-8?Q?Gr=C3=BC=C3=9Fe_aus_K=C3=B6ln?=", "Grüße aus Köln"],
    ["=?utf-8?B?8J+OiSBQYXJ0eQ==?=", "🎉 Party"],
    ["=?ISO-8859-1?Q?Caf=E9?= =?ISO-8859-1?Q?_cr=E8me?=", "Café crème"],
    ["Re: =?UTF-8?Q?r=C3=A9sum=C3=A9?= attached", "Re: résumé attached"],
    ["plain ascii subject", "plain ascii subject"],
  ])("decodes the RFC 2047 subject %p", async (header, expected) => {
    const { message } = await parseMessage(plain("From: a@example.com", `Subject: ${header}`), PARSE_OPTIONS);
    expect(message.subject).toBe(expected);
  });

  test("gives an empty subject, empty address lists and a null date when those headers are absent", async () => {
    const { message } = await parseMessage(plain("X-Only: 1"), PARSE_OPTIONS);
    expect(message).toMatchObject({ subject: "", from: [], to: [], cc: [], reply_to: [], date: null });
  });

  test("lowercases emails, decodes display names and flattens groups", async () => {
    const { message } = await parseMessage(
      plain(
        'From: "=?UTF-8?Q?J=C3=B6rg?=" <Joerg@Example.COM>',
        "To: Team: Ann <ANN@x.org>, bob@X.org;, carol@x.org",
        "Cc: undisclosed-recipients:;",
        "Reply-To: Support <Support@x.org>",
      ),
      PARSE_OPTIONS,
    );
    expect(message.from).toEqual([{ email: "joerg@example.com", name: "Jörg" }]);
    expect(message.to).toEqual([
      { email: "ann@x.org", name: "Ann" },
      { email: "bob@x.org", name: "" },
      { email: "carol@x.org", name: "" },
    ]);
    expect(message.cc).toEqual([]);
    expect(message.reply_to).toEqual([{ email: "support@x.org", name: "Support" }]);
  });

  test("joins repeated headers with a comma and lists them in headers_multi only", async () => {
    const { message } = await parseMessage(
      plain(
        "Received: from a by b",
        "Received: from c by d",
        "X-Note: =?UTF-8?Q?caf=C3=A9?=",
        "From: a@example.com",
      ),
      PARSE_OPTIONS,
    );
    expect(message.headers.received).toBe("from a by b, from c by d");
    expect(message.headers_multi).toEqual({ received: ["from a by b", "from c by d"] });
    expect(message.headers["x-note"]).toBe("café");
    expect(message.headers.from).toBe("a@example.com");
  });

  test("keeps a header named __proto__ as an ordinary entry", async () => {
    const { message } = await parseMessage(
      plain("__proto__: a", "__proto__: b", "From: a@example.com"),
      PARSE_OPTIONS,
    );
    expect(Object.getPrototypeOf(message.headers_multi)).toBe(Object.prototype);
    expect(Object.hasOwn(message.headers_multi, "__proto__")).toBe(true);
    expect(Object.getOwnPropertyDescriptor(message.headers, "__proto__")?.value).toBe("a, b");
  });

  test("keeps the Message-ID with its angle brackets", async () => {
    const { message } = await parseMessage(plain("Message-ID:  <Abc.123@Example.com> "), PARSE_OPTIONS);
    expect(message.message_id).toBe("<Abc.123@Example.com>");
    expect(message.message_id_is_synthetic).toBe(false);
  });

  test("wraps a Message-ID written without angle brackets", async () => {
    const { message } = await parseMessage(plain("Message-ID: abc@example.com"), PARSE_OPTIONS);
    expect(message.message_id).toBe("<abc@example.com>");
  });

  test.each([
    ["absent", []],
    ["empty", ["Message-ID: "]],
    ["garbage", ["Message-ID: not an id"]],
  ])("creates a synthetic Message-ID on the inbound domain when it is %s", async (_label, headers) => {
    const { message } = await parseMessage(plain("From: a@example.com", ...headers), PARSE_OPTIONS);
    expect(message.message_id).toBe("<0b6f9a9e-1c2d-4e3f-8a9b-0c1d2e3f4a5b@in.localhost>");
    expect(message.message_id_is_synthetic).toBe(true);
  });

  test("gives received_at in RFC 3339 UTC whole seconds", async () => {
    const { message } = await parseMessage(plain("From: a@example.com"), PARSE_OPTIONS);
    expect(message.received_at).toBe("2024-05-06T07:08:09Z");
  });
});

describe("parseDateHeader", () => {
  test.each([
    ["Tue, 1 Jul 2003 10:52:37 +0200", "2003-07-01T08:52:37Z"],
    ["Mon, 6 May 2024 09:08:07 -0700 (PDT)", "2024-05-06T16:08:07Z"],
    ["6 May 2024 09:08:07 GMT", "2024-05-06T09:08:07Z"],
    ["Fri, 21 Nov 1997 09:55:06.789 -0600", "1997-11-21T15:55:06Z"],
  ])("reads %p as %p", (value, expected) => {
    expect(parseDateHeader(value)).toBe(expected);
  });

  test.each([["not a date"], [""], ["(only a comment)"], [undefined]])("gives null for %p", (value) => {
    expect(parseDateHeader(value)).toBeNull();
  });
});

describe("parseMessage bodies", () => {
  test("decodes an ISO-8859-1 8bit body and encoded-word headers", async () => {
    const { message } = await parseMessage(emailFixture("latin1-body.eml"), PARSE_OPTIONS);
    expect(message.text).toBe("Le café est prêt, garçon.\n");
    expect(message.subject).toBe("Café crème");
    expect(message.from).toEqual([{ email: "andre@example.com", name: "André Müller" }]);
    expect(message.date).toBe("2003-07-01T08:52:37Z");
  });

  test("decodes an ISO-2022-JP body and subject", async () => {
    const { message } = await parseMessage(emailFixture("iso-2022-jp.eml"), PARSE_OPTIONS);
    expect(message.subject).toBe("件名テスト");
    expect(message.text).toContain("日本語のメールです。");
  });

  test("decodes a windows-1252 quoted-printable body", async () => {
    const { message } = await parseMessage(emailFixture("windows-1252-qp.eml"), PARSE_OPTIONS);
    expect(message.text).toContain("It costs € 5 “today”.");
  });

  test("derives the text of an HTML-only message from its HTML and says so in text_source", async () => {
    const { message } = await parseMessage(emailFixture("cid-inline.eml"), PARSE_OPTIONS);
    expect(message.text).toBe("and");
    expect(message.text_source).toBe("html");
    expect(message.html).toContain('src="cid:logo@example.com"');
  });
});

describe("parseMessage on bad input", () => {
  test.each([
    ["empty input", new Uint8Array()],
    ["only line breaks", eml("", "", "")],
    ["nesting beyond the parser's limit", eml(...deepMultipart(300))],
  ])("throws MessageParseError ingest.unparseable for %s", async (_label, raw) => {
    const error = await parseMessage(raw, PARSE_OPTIONS).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MessageParseError);
    expect((error as MessageParseError).code).toBe("ingest.unparseable");
  });

  test.each([
    ["no header block", eml("just some words", "and more")],
    ["binary noise", new Uint8Array(Array.from({ length: 512 }, (_, i) => (i * 37) % 256))],
    ["a multipart without boundary", eml("Content-Type: multipart/mixed", "", "body")],
    [
      "a truncated multipart",
      eml('Content-Type: multipart/mixed; boundary="b"', "", "--b", "Content-Type: te"),
    ],
    [
      "broken base64",
      eml("Content-Type: application/pdf", "Content-Transfer-Encoding: base64", "", "%%%===AB"),
    ],
    ["an unknown charset", eml("Content-Type: text/plain; charset=x-unknown-42", "", "hi")],
  ])("accepts %s without throwing", async (_label, raw) => {
    const parsed = await parseMessage(raw, PARSE_OPTIONS);
    expect(parsed.message.message_id_is_synthetic).toBe(true);
  });
});

function deepMultipart(depth: number): string[] {
  const lines: string[] = [];
  for (let i = 0; i < depth; i++)
    lines.push(`Content-Type: multipart/mixed; boundary="b${i}"`, "", `--b${i}`);
  lines.push("Content-Type: text/plain", "", "deep");
  return lines;
}
