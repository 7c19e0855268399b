import { describe, expect, test } from "bun:test";
import { parseStructuredValue } from "../../../services/mail/mime/params.ts";
import { decodeBase64, decodeQuotedPrintable } from "../../../services/mail/mime/transfer.ts";
import { type MimePart, parseMimeTree } from "../../../services/mail/mime/tree.ts";

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
const text = (data: Uint8Array): string => new TextDecoder().decode(data);

describe("decodeQuotedPrintable", () => {
  test.each([
    ["keeps CRLF hard breaks", "a\r\nb", "a\r\nb"],
    ["keeps LF hard breaks", "a\nb", "a\nb"],
    ["joins soft breaks", "ab=\r\ncd", "abcd"],
    ["drops transport whitespace before a break", "a  \t\r\nb", "a\r\nb"],
    ["decodes lowercase hex", "caf=c3=a9", "café"],
    ["keeps an = that starts no escape", "1 =G 2 =", "1 =G 2 "],
    ["keeps a trailing = at the very end as a soft break", "end=", "end"],
  ])("%s", (_label, input, expected) => {
    expect(text(decodeQuotedPrintable(bytes(input)))).toBe(expected);
  });
});

describe("decodeBase64", () => {
  test.each([
    ["ignores line breaks and junk", "aGVs\r\nbG8*", "hello"],
    ["decodes padded tails", "QQ==", "A"],
    ["decodes unpadded tails", "QUI", "AB"],
    ["decodes two bodies glued together", "QQ==Qg==", "AB"],
    ["gives nothing for nothing", "", ""],
  ])("%s", (_label, input, expected) => {
    expect(text(decodeBase64(bytes(input)))).toBe(expected);
  });
});

describe("decoded bytes", () => {
  test("a large base64 body decodes byte for byte into (nearly) the buffer it was decoded in", () => {
    const data = new Uint8Array(3_000_000);
    for (let i = 0; i < data.length; i++) data[i] = (i * 2654435761) >>> 24;
    const b64 = Buffer.from(data).toString("base64");
    const lines = b64.match(/.{1,76}/g)?.join("\r\n") ?? "";
    const out = decodeBase64(bytes(lines));
    expect(Buffer.from(out).equals(Buffer.from(data))).toBe(true);
    // a view of the decoding buffer (sized for the line breaks too): no second copy is made to trim it
    expect(out.buffer.byteLength).toBeGreaterThan(out.byteLength);
    expect(out.buffer.byteLength).toBeLessThan(data.length * 1.05);
  });

  test("an output that fills a small part of its buffer is copied out of it", () => {
    const junk = `${"!".repeat(100_000)}QUJD`;
    const out = decodeBase64(bytes(junk));
    expect(text(out)).toBe("ABC");
    expect(out.buffer.byteLength).toBe(3);
    const qp = decodeQuotedPrintable(bytes(`${"=41".repeat(10_000)}`));
    expect(text(qp)).toBe("A".repeat(10_000));
    expect(qp.buffer.byteLength).toBe(10_000);
  });
});

describe("parseStructuredValue", () => {
  test.each([
    ['attachment; filename="a; b.txt"', "attachment", { filename: "a; b.txt" }],
    ['ATTACHMENT; FileName="q\\"uote.txt"', "attachment", { filename: 'q"uote.txt' }],
    ["attachment; filename=plain.txt; filename=second.txt", "attachment", { filename: "plain.txt" }],
    [
      "attachment; filename=old.txt; filename*=utf-8''new%20one.txt",
      "attachment",
      { filename: "new one.txt" },
    ],
    ["text/plain; charset=UTF-8; format=flowed", "text/plain", { charset: "UTF-8", format: "flowed" }],
    ["attachment; filename*=unknown-charset''x%41y.txt", "attachment", { filename: "xAy.txt" }],
    ["inline; junk; =novalue", "inline", {}],
  ])("parses %p", (header, value, params) => {
    expect(parseStructuredValue(header)).toEqual({ value, params });
  });
});

describe("parseMimeTree", () => {
  const paths = (part: MimePart): string[] => [
    ...(part.children.length === 0 && !part.message ? [`${part.path} ${part.contentType.value}`] : []),
    ...part.children.flatMap(paths),
    ...(part.message ? paths(part.message) : []),
  ];

  test("numbers parts like IMAP sections and ignores preamble and epilogue", () => {
    const raw = bytes(
      [
        'Content-Type: multipart/mixed; boundary="o"',
        "",
        "preamble --o is not a delimiter",
        "--o",
        "Content-Type: text/plain",
        "",
        "one",
        "--o  ",
        'Content-Type: multipart/alternative; boundary="i"',
        "",
        "--i",
        "Content-Type: text/plain",
        "",
        "two",
        "--i",
        "Content-Type: text/html",
        "",
        "<p>three</p>",
        "--i--",
        "--o",
        "Content-Type: message/rfc822",
        "",
        "Content-Type: image/png",
        "",
        "png",
        "--o--",
        "epilogue",
      ].join("\n"),
    );
    expect(paths(parseMimeTree(raw))).toEqual([
      "1 text/plain",
      "2.1 text/plain",
      "2.2 text/html",
      "3.1 image/png",
    ]);
  });

  test("ends a part before the line break that belongs to the next delimiter", () => {
    const raw = bytes('Content-Type: multipart/mixed; boundary="b"\r\n\r\n--b\r\n\r\nbody\r\n\r\n--b--\r\n');
    const part = parseMimeTree(raw).children[0];
    expect(text(raw.subarray(part?.bodyStart, part?.bodyEnd))).toBe("body\r\n");
  });

  test("reads a part of a multipart/digest as message/rfc822 by default", () => {
    const raw = bytes('Content-Type: multipart/digest; boundary="d"\n\n--d\n\nSubject: x\n\nhi\n--d--\n');
    expect(parseMimeTree(raw).children[0]?.contentType.value).toBe("message/rfc822");
  });

  test("reads a malformed Content-Type as text/plain", () => {
    expect(parseMimeTree(bytes("Content-Type: garbage\n\nhi")).contentType.value).toBe("text/plain");
  });
});
