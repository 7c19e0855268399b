import { describe, expect, test } from "bun:test";
import {
  ATTACHMENT_ID_SUFFIX_HEX,
  attachmentIdSuffix,
  exceedsCandidateLimit,
  extractAttachments,
  MAX_ATTACHMENT_BYTES,
  MAX_CANDIDATE_BYTES,
} from "../../../services/mail/extract.ts";
import { parseMessage } from "../../../services/mail/parse.ts";
import { emailFixture, eml, PARSE_OPTIONS, sha256, TINY_PNG } from "../../support/raw-mail.ts";

const encoder = new TextEncoder();
const ascii = (text: string): Uint8Array => encoder.encode(text);

/** A multipart/mixed message with a text body and the given parts (header lines, blank, body). */
function mixed(...parts: string[][]): Uint8Array {
  const lines = ["From: a@example.com", 'Content-Type: multipart/mixed; boundary="B"', "", "--B"];
  lines.push("Content-Type: text/plain", "", "Body text.");
  for (const part of parts) lines.push("--B", ...part);
  lines.push("--B--", "");
  return eml(...lines);
}

describe("extractAttachments: what counts as an attachment", () => {
  test.each([
    [
      "a part marked attachment, even text",
      ["Content-Type: text/plain", "Content-Disposition: attachment", "", "x"],
    ],
    [
      "an inline part with a filename",
      ["Content-Type: text/plain", 'Content-Disposition: inline; filename="n.txt"', "", "x"],
    ],
    [
      "an inline image with a Content-ID",
      ["Content-Type: image/gif", "Content-ID: <g@x>", "Content-Disposition: inline", "", "x"],
    ],
    ["a binary part without disposition or name", ["Content-Type: application/pdf", "", "%PDF-1.4"]],
    ["a part named only on Content-Type", ["Content-Type: text/csv; name=report.csv", "", "a,b"]],
    [
      "a calendar invite without disposition",
      ["Content-Type: text/calendar; method=REQUEST", "", "BEGIN:VCALENDAR"],
    ],
  ])("extracts %s", (_label, part) => {
    expect(extractAttachments(mixed(part)).attachments).toHaveLength(1);
  });

  test.each([
    [
      "an inline text part without a filename",
      ["Content-Type: text/plain", "Content-Disposition: inline", "", "x"],
    ],
    ["an html body part", ["Content-Type: text/html", "", "<p>x</p>"]],
    [
      "an inline image without a Content-ID or name",
      ["Content-Type: image/png", "Content-Disposition: inline", "", "x"],
    ],
    ["a delivery-status report part", ["Content-Type: message/delivery-status", "", "Action: failed"]],
    ["the headers of a bounced message", ["Content-Type: text/rfc822-headers", "", "Subject: x"]],
    ["a text/enriched body alternative", ["Content-Type: text/enriched", "", "<bold>x</bold>"]],
  ])("leaves out %s", (_label, part) => {
    expect(extractAttachments(mixed(part)).attachments).toEqual([]);
  });

  test("extracts a CID inline image and not the remote image the html links to", async () => {
    const parsed = await parseMessage(emailFixture("cid-inline.eml"), PARSE_OPTIONS);
    expect(parsed.message.attachments).toEqual([
      {
        id: "att_2",
        filename: "attachment-1.png",
        content_type: "image/png",
        size: TINY_PNG.length,
        is_inline: true,
        content_id: "logo@example.com",
        sha256: sha256(TINY_PNG),
      },
    ]);
  });

  test("keeps an attached message/rfc822 as one .eml and opens a forwarded one", async () => {
    const parsed = await parseMessage(emailFixture("rfc822-parts.eml"), PARSE_OPTIONS);
    const [eml822, csv] = parsed.attachments;
    expect(parsed.attachments).toHaveLength(2);
    expect(eml822?.descriptor).toMatchObject({
      id: "att_2",
      filename: "attachment-1.eml",
      content_type: "message/rfc822",
    });
    expect(new TextDecoder().decode(eml822?.bytes)).toStartWith("From: inner@example.com\r\n");
    expect(new TextDecoder().decode(eml822?.bytes)).toEndWith("Inner body.\r\n");
    expect(csv?.descriptor).toMatchObject({ id: "att_3_2", filename: "data.csv", content_type: "text/csv" });
    expect(parsed.message.text).toContain("Forwarded text.");
  });

  test("gives the same ids for the same raw message, following the part position", async () => {
    const raw = emailFixture("rfc2231-filenames.eml");
    const first = (await parseMessage(raw, PARSE_OPTIONS)).message.attachments.map((a) => a.id);
    const second = (await parseMessage(raw, PARSE_OPTIONS)).message.attachments.map((a) => a.id);
    expect(first).toEqual(["att_2", "att_3", "att_4", "att_5", "att_6", "att_7"]);
    expect(second).toEqual(first);
  });
});

describe("extractAttachments: filenames", () => {
  test("decodes RFC 2231 extended, continued and charset-tagged names and RFC 2047 words", () => {
    const names = extractAttachments(emailFixture("rfc2231-filenames.eml")).attachments.map(
      (a) => a.descriptor.filename,
    );
    expect(names).toEqual([
      "naïve résumé.txt",
      "日本語 report.txt",
      "café.txt",
      "Annual Report 2024.pdf",
      "über.txt",
      "only-on-content-type.txt",
    ]);
  });

  test.each([
    ["../../etc/passwd", "passwd"],
    ["C:\\Users\\me\\report.pdf", "report.pdf"],
    [".htaccess", "htaccess"],
    ["a\u0001b\u007f.txt", "ab.txt"],
    ["invoice\u202Efdp.exe", "invoicefdp.exe"],
    ['what?<>|":*.txt', "what_______.txt"],
    ["Список.doc", "Список.doc"],
    ["  spaced.txt  ", "spaced.txt"],
    ["...", "attachment-1.pdf"],
    ["/", "attachment-1.pdf"],
  ])("sanitises the filename %p to %p", (name, expected) => {
    const raw = mixed([
      "Content-Type: application/pdf",
      `Content-Disposition: attachment; filename="${name.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`,
      "",
      "x",
    ]);
    expect(extractAttachments(raw).attachments[0]?.descriptor.filename).toBe(expected);
  });

  test("caps a very long filename and keeps its extension", () => {
    const raw = mixed([
      "Content-Type: application/pdf",
      `Content-Disposition: attachment; filename="${"a".repeat(300)}.pdf"`,
      "",
      "x",
    ]);
    const filename = extractAttachments(raw).attachments[0]?.descriptor.filename ?? "";
    expect(filename.length).toBe(200);
    expect(filename).toEndWith(".pdf");
  });

  test("numbers fallback names by candidate and takes the extension from the type", () => {
    const raw = mixed(
      ["Content-Type: image/jpeg", "Content-Disposition: attachment", "", "x"],
      ["Content-Type: application/x-unknown", "Content-Disposition: attachment", "", "y"],
    );
    const names = extractAttachments(raw).attachments.map((a) => a.descriptor.filename);
    expect(names).toEqual(["attachment-1.jpg", "attachment-2.bin"]);
  });
});

describe("extractAttachments: exact bytes", () => {
  const expected = ascii("line one\r\nline two =\r\n\tindented\r\nlast");

  test.each([
    ["base64", "b64.txt", expected],
    [
      "quoted-printable (soft break keeps the spaces before it)",
      "qp.txt",
      ascii("line one\r\nline two =\r\n\tindented   \r\nlast"),
    ],
    ["7bit", "seven.txt", expected],
  ])("keeps CRLF line breaks of a %s attachment", (_label, filename, bytes) => {
    const found = extractAttachments(emailFixture("crlf-attachments.eml")).attachments.find(
      (a) => a.descriptor.filename === filename,
    );
    expect(found?.bytes).toEqual(bytes);
    expect(found?.descriptor.sha256).toBe(sha256(bytes));
    expect(found?.descriptor.size).toBe(bytes.length);
  });

  test("decodes binary base64 content byte for byte", () => {
    const binary = new Uint8Array(Array.from({ length: 4096 }, (_, i) => (i * 131 + 7) % 256));
    const base64 = Buffer.from(binary).toString("base64").replace(/.{76}/g, "$&\r\n");
    const raw = mixed([
      "Content-Type: application/octet-stream",
      "Content-Transfer-Encoding: base64",
      "",
      base64,
    ]);
    expect(extractAttachments(raw).attachments[0]?.descriptor.sha256).toBe(sha256(binary));
  });
});

describe("extractAttachments: limits", () => {
  /** A binary-encoded attachment of `size` bytes; identity encoding keeps the test fast. */
  const big = (size: number, name: string): string[] => [
    "Content-Type: application/octet-stream",
    `Content-Disposition: attachment; filename="${name}"`,
    "Content-Transfer-Encoding: binary",
    "",
    "x".repeat(size),
  ];

  test("keeps a file of exactly 25 MiB and skips one byte more", () => {
    const result = extractAttachments(
      mixed(big(MAX_ATTACHMENT_BYTES, "max.bin"), big(MAX_ATTACHMENT_BYTES + 1, "over.bin")),
    );
    expect(result.attachments.map((a) => a.descriptor.filename)).toEqual(["max.bin"]);
    expect(result.skipped).toEqual([
      {
        filename: "over.bin",
        content_type: "application/octet-stream",
        size: MAX_ATTACHMENT_BYTES + 1,
        reason: "too_large",
      },
    ]);
    expect(result.candidateBytes).toBe(2 * MAX_ATTACHMENT_BYTES + 1);
  });

  test("counts skipped files in the candidate total that rejects a message over 50 MiB", () => {
    const mib = 1024 * 1024;
    const result = extractAttachments(
      mixed(big(26 * mib, "skipped.bin"), big(24 * mib, "kept.bin"), big(1, "one.bin")),
    );
    expect(result.skipped).toHaveLength(1);
    expect(result.candidateBytes).toBe(MAX_CANDIDATE_BYTES + 1);
    expect(exceedsCandidateLimit(result.candidateBytes)).toBe(true);
    expect(exceedsCandidateLimit(MAX_CANDIDATE_BYTES)).toBe(false);
  });
});

describe("parseMessage with large attachments", () => {
  test("a large base64 attachment is extracted byte-exactly while the text and HTML bodies around it survive", async () => {
    const payload = new Uint8Array(300 * 1024).map((_, i) => (i * 31 + 7) & 0xff);
    const b64 = Buffer.from(payload).toString("base64").replace(/.{76}/g, "$&\r\n");
    const raw = eml(
      "From: a@example.com",
      "Subject: big",
      'Content-Type: multipart/mixed; boundary="B"',
      "",
      "--B",
      'Content-Type: multipart/alternative; boundary="A"',
      "",
      "--A",
      "Content-Type: text/plain",
      "",
      "Before the attachment.",
      "--A",
      "Content-Type: text/html",
      "",
      "<p>Before the attachment.</p>",
      "--A--",
      "--B",
      'Content-Type: application/octet-stream; name="blob.bin"',
      "Content-Transfer-Encoding: base64",
      'Content-Disposition: attachment; filename="blob.bin"',
      "",
      b64,
      "--B",
      "Content-Type: text/plain",
      "Content-Disposition: inline",
      "",
      "After the attachment.",
      "--B--",
      "",
    );
    const parsed = await parseMessage(raw, PARSE_OPTIONS);
    expect(parsed.message.text).toContain("Before the attachment.");
    expect(parsed.message.text).toContain("After the attachment.");
    expect(parsed.message.html).toContain("<p>Before the attachment.</p>");
    expect(parsed.attachments).toHaveLength(1);
    expect(parsed.attachments[0]?.descriptor.size).toBe(payload.length);
    expect(parsed.attachments[0]?.descriptor.sha256).toBe(sha256(payload));
  });
});

describe("attachmentIdSuffix: ids of a message whose Message-ID is already stored", () => {
  const a = sha256(ascii("one message"));
  const b = sha256(ascii("another message with the same Message-ID"));

  test("is `-` and the first 12 hex digits of the raw message's SHA-256", () => {
    expect(ATTACHMENT_ID_SUFFIX_HEX).toBe(12);
    expect(attachmentIdSuffix(a)).toBe(`-${a.slice(0, 12)}`);
  });

  test("is stable for the same bytes and differs for different bytes", () => {
    expect(attachmentIdSuffix(a)).toBe(attachmentIdSuffix(sha256(ascii("one message"))));
    expect(attachmentIdSuffix(a)).not.toBe(attachmentIdSuffix(b));
  });

  test("never makes an id that part positions alone can give", () => {
    const raw = mixed(
      ["Content-Type: application/pdf", "Content-Disposition: attachment", "", "x"],
      ["Content-Type: application/pdf", "Content-Disposition: attachment", "", "y"],
    );
    const ids = extractAttachments(raw).attachments.map((x) => x.descriptor.id);
    expect(ids).toEqual(["att_2", "att_3"]);
    for (const id of ids) expect(id).toMatch(/^att_[0-9_]+$/);
    // A digits-only hash prefix still cannot pass for a deeper part path such as 2.123456789012.
    const digits = "1234567890120000000000000000000000000000000000000000000000000000";
    expect(`att_2${attachmentIdSuffix(digits)}`).toBe("att_2-123456789012");
    expect(`att_2${attachmentIdSuffix(digits)}`).not.toMatch(/^att_[0-9_]+$/);
  });

  test("refuses anything but a lowercase hex SHA-256", () => {
    expect(() => attachmentIdSuffix("ABC")).toThrow();
    expect(() => attachmentIdSuffix(a.toUpperCase())).toThrow();
  });
});
