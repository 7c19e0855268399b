// Bad input stays linear: every input here is parsed once, in full, and checked for what it must
// give; the suite's timeout is the bound (no timed assertions). Each case would take minutes with
// work quadratic in the line length, the number of lines or the nesting depth.
import { describe, expect, test } from "bun:test";
import { MAX_MIME_DEPTH } from "../../../services/mail/mime/tree.ts";
import { MessageParseError, parseMessage } from "../../../services/mail/parse.ts";
import { PARSE_OPTIONS } from "../../support/raw-mail.ts";

const MiB = 1024 * 1024;
const encode = (text: string): Uint8Array => new TextEncoder().encode(text);
const parse = (raw: Uint8Array) => parseMessage(raw, PARSE_OPTIONS);

/** Deterministic pseudo-random bytes (xorshift), so a failure reproduces. */
function junk(length: number, seed = 0x2545f491): Uint8Array {
  const out = new Uint8Array(length);
  let x = seed;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

function withBody(head: string, body: Uint8Array, tail = ""): Uint8Array {
  const a = encode(head);
  const c = encode(tail);
  const out = new Uint8Array(a.length + body.length + c.length);
  out.set(a);
  out.set(body, a.length);
  out.set(c, a.length + body.length);
  return out;
}

/** `depth` multiparts nested in each other around one text part. */
function nested(depth: number, body: string): string {
  const open: string[] = [];
  const close: string[] = [];
  for (let i = 0; i < depth; i++) {
    open.push(`Content-Type: multipart/mixed; boundary="b${i}"`, "", `--b${i}`);
    close.unshift(`--b${i}--`);
  }
  return [...open, "Content-Type: text/plain", "", body, ...close, ""].join("\r\n");
}

describe("long lines", () => {
  test("reads a text body that is one 8 MiB line", async () => {
    const line = "x".repeat(8 * MiB);
    const { message } = await parse(encode(`Subject: long\r\nContent-Type: text/plain\r\n\r\n${line}\r\n`));
    expect(message.text.length).toBe(8 * MiB + 1);
  });

  test("reads a 1 MiB header line and an 8 MiB line inside a multipart", async () => {
    const subject = "s".repeat(MiB);
    const line = "y".repeat(8 * MiB);
    const raw = encode(
      [
        `Subject: ${subject}`,
        'Content-Type: multipart/mixed; boundary="m"',
        "",
        "--m",
        "Content-Type: text/plain",
        "",
        line,
        "--m",
        "Content-Type: application/octet-stream; name=a.bin",
        "",
        line,
        "--m--",
        "",
      ].join("\r\n"),
    );
    const { message, attachments } = await parse(raw);
    expect(message.subject.length).toBe(MiB);
    expect(message.text.length).toBe(8 * MiB);
    expect(attachments[0]?.descriptor.size).toBe(8 * MiB);
  });

  test("reads an HTML-only body of 2 MiB of unclosed tags and comment openers", async () => {
    const html = "<a <b <!-- x ".repeat((2 * MiB) / 13);
    const { message } = await parse(encode(`Content-Type: text/html\r\n\r\n<p>start</p>${html}\r\n`));
    expect(message.text_source).toBe("html");
    expect(message.text.startsWith("start")).toBe(true);
  });

  test("decodes a subject of 60,000 encoded words and a To of 60,000 addresses", async () => {
    const raw = encode(
      `Subject: ${"=?utf-8?B?YWJj?= ".repeat(60_000)}\r\nTo: ${"x@y.z, ".repeat(60_000)}\r\n\r\nhi\r\n`,
    );
    const { message } = await parse(raw);
    expect(message.subject).toBe("abc".repeat(60_000));
    expect(message.to).toHaveLength(60_000);
  });

  test("refuses header blocks over 2 MiB as unparseable", async () => {
    const raw = encode(`Subject: ${"h".repeat(3 * MiB)}\r\n\r\nbody\r\n`);
    expect(await parse(raw).catch((e: unknown) => e)).toBeInstanceOf(MessageParseError);
  });
});

describe("binary junk", () => {
  test("reads 4 MiB of random bytes declared as a UTF-8 text part without losing the message", async () => {
    const raw = withBody(
      'Subject: junk\r\nContent-Type: multipart/mixed; boundary="j"\r\n\r\n--j\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n',
      junk(4 * MiB),
      "\r\n--j\r\nContent-Type: application/pdf; name=kept.pdf\r\n\r\n%PDF-1.4\r\n--j--\r\n",
    );
    const { message, attachments } = await parse(raw);
    expect(message.subject).toBe("junk");
    expect(message.text.length).toBeGreaterThan(MiB);
    expect(attachments.map((a) => a.descriptor.filename)).toEqual(["kept.pdf"]);
  });

  test("reads 4 MiB of random bytes as a whole message without throwing", async () => {
    const parsed = await parse(junk(4 * MiB, 7));
    expect(parsed.message.message_id_is_synthetic).toBe(true);
  });

  test("reads 200,000 lines that start like a delimiter but are not one", async () => {
    const lines = Array.from({ length: 200_000 }, (_, i) => `--b${i % 10}x`).join("\r\n");
    const raw = encode(
      `Content-Type: multipart/mixed; boundary="b"\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\n${lines}\r\n--b--\r\n`,
    );
    const { message } = await parse(raw);
    expect(message.text.split("\n")).toHaveLength(200_000);
  });
});

describe("deep nesting", () => {
  test(`reads a text part nested ${MAX_MIME_DEPTH - 1} multiparts deep`, async () => {
    const { message } = await parse(encode(nested(MAX_MIME_DEPTH - 1, "deep inside")));
    expect(message.text.trim()).toBe("deep inside");
  });

  test("reads 200 nested multiparts around a 4 MiB body", async () => {
    const { message } = await parse(encode(nested(200, "z".repeat(4 * MiB))));
    expect(message.text.trim().length).toBe(4 * MiB);
  });

  test(`refuses nesting beyond ${MAX_MIME_DEPTH} levels as unparseable`, async () => {
    const error = await parse(encode(nested(MAX_MIME_DEPTH + 10, "too deep"))).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MessageParseError);
    expect((error as MessageParseError).code).toBe("ingest.unparseable");
  });

  test("opens at most 10 inline forwarded messages into the body, however deep they nest", async () => {
    let inner = "Content-Type: text/plain\r\n\r\ninnermost\r\n";
    for (let i = 0; i < 50; i++)
      inner = `Subject: level ${i}\r\nContent-Type: message/rfc822\r\n\r\n${inner}`;
    const { message } = await parse(encode(inner));
    expect(message.text).not.toContain("innermost");
    expect(message.text).toContain("Subject: level 48");
  });
});
