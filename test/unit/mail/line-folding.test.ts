// Line ends of large bodies folded in their bytes (mail/mime/lines.ts, mail/body.ts): the same text as
// folding the decoded text, and the raw message exactly as it was once the parse returns.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { FOLD_IN_BYTES_FROM } from "../../../services/mail/body.ts";
import { decodeCharset } from "../../../services/mail/mime/charset.ts";
import { foldCrlfInPlace } from "../../../services/mail/mime/lines.ts";
import { parseMessage } from "../../../services/mail/parse.ts";
import { PARSE_OPTIONS } from "../../support/raw-mail.ts";

/** Bytes that exercise the fold: line ends of every kind, ASCII, UTF-8 (whole and broken), Latin-1. */
const PIECES = [
  [0x0d],
  [0x0a],
  [0x0d, 0x0a],
  [0x41],
  [0x20],
  [0xc3, 0xa9],
  [0xc3],
  [0xa9],
  [0xe2, 0x82, 0xac],
  [0xef, 0xbb, 0xbf],
];
const bodyBytes = fc
  .array(fc.constantFrom(...PIECES), { maxLength: 200 })
  .map((pieces) => Uint8Array.from(pieces.flat()));

const latin1 = (bytes: Uint8Array): string => Buffer.from(bytes).toString("latin1");

describe("foldCrlfInPlace", () => {
  test("folds exactly the CR LF pairs, and restore puts every byte back", () => {
    fc.assert(
      fc.property(bodyBytes, (bytes) => {
        const before = bytes.slice();
        const folded = foldCrlfInPlace(bytes);
        expect(latin1(bytes.subarray(0, folded.length))).toBe(latin1(before).replace(/\r\n/g, "\n"));
        folded.restore();
        expect(Buffer.compare(Buffer.from(bytes), Buffer.from(before))).toBe(0);
      }),
      { numRuns: 2000 },
    );
  });

  test("folds a subarray without touching the bytes around it", () => {
    const whole = new TextEncoder().encode("head\r\nA\r\nB\r\r\nC\rD\n\r\ntail\r\n");
    const before = whole.slice();
    const part = whole.subarray(6, whole.length - 6);
    const folded = foldCrlfInPlace(part);
    expect(latin1(part.subarray(0, folded.length))).toBe("A\nB\r\nC\rD\n\n");
    expect(latin1(whole.subarray(0, 6))).toBe("head\r\n");
    expect(latin1(whole.subarray(whole.length - 6))).toBe("tail\r\n");
    folded.restore();
    expect(Buffer.compare(Buffer.from(whole), Buffer.from(before))).toBe(0);
  });
});

/** A single-part message whose body is `body` repeated past the size from which it is folded in bytes. */
function largeMessage(body: Uint8Array, headers: string[]): { raw: Uint8Array; bodyBytes: Uint8Array } {
  const times = Math.ceil((FOLD_IN_BYTES_FROM + 1) / Math.max(body.length, 1));
  const repeated = new Uint8Array(body.length * times);
  for (let i = 0; i < times; i++) repeated.set(body, i * body.length);
  const head = new TextEncoder().encode(
    ["From: a@example.com", "Subject: large", "MIME-Version: 1.0", ...headers, "", ""].join("\r\n"),
  );
  const raw = new Uint8Array(head.length + repeated.length);
  raw.set(head);
  raw.set(repeated, head.length);
  return { raw, bodyBytes: repeated };
}

describe("a large text body is folded in its bytes", () => {
  const cases: Array<[string, string, string[]]> = [
    [
      "UTF-8 with every kind of line end",
      "Grüße — 日本語 🎉\r\nline\rbare CR\nbare LF\r\n",
      ["Content-Type: text/plain; charset=utf-8"],
    ],
    ["no charset, Latin-1 bytes (read as Windows-1252)", "", ["Content-Type: text/plain"]],
    ["mostly UTF-8 with a broken sequence", "", ["Content-Type: text/plain; charset=us-ascii"]],
    [
      "a byte-order mark first",
      "\ufeffFirst line\r\nsecond\r\n",
      ["Content-Type: text/plain; charset=utf-8"],
    ],
    ["HTML", "<p>Gr\u00fc\u00dfe</p>\r\n<p>more</p>\r\n", ["Content-Type: text/html; charset=utf-8"]],
  ];
  const bodies: Record<string, Uint8Array> = {
    "no charset, Latin-1 bytes (read as Windows-1252)": Uint8Array.from([
      ...new TextEncoder().encode("caf"),
      0xe9,
      0x0d,
      0x0a,
      0x80,
      0x0d,
      0x0d,
      0x0a,
    ]),
    "mostly UTF-8 with a broken sequence": Uint8Array.from([
      ...new TextEncoder().encode("déjà vu\r\n"),
      0xc3,
      0x0d,
      0x0a,
      ...new TextEncoder().encode("ok\r\n"),
    ]),
  };

  for (const [name, text, headers] of cases) {
    test(`${name}: the text is the decoded body with CR LF folded, and the raw bytes are unchanged`, async () => {
      const body = bodies[name] ?? new TextEncoder().encode(text);
      const { raw, bodyBytes: encoded } = largeMessage(body, headers);
      const before = raw.slice();
      const { message } = await parseMessage(raw, PARSE_OPTIONS);
      const charset = /charset=([\w-]+)/.exec(headers[0] ?? "")?.[1];
      const expected = decodeCharset(encoded, charset).replace(/\r\n/g, "\n");
      const got = headers[0]?.includes("text/html") ? message.html : message.text;
      expect(got.length).toBe(expected.length);
      expect(got === expected).toBe(true);
      expect(Buffer.compare(Buffer.from(raw), Buffer.from(before))).toBe(0);
    });
  }

  test("a base64 body is folded in its decoded bytes", async () => {
    const line = "Zeile mit Umlauten: äöü\r\n";
    const text = line.repeat(Math.ceil(FOLD_IN_BYTES_FROM / line.length) + 1);
    const b64 = Buffer.from(text, "utf8").toString("base64").replace(/.{76}/g, "$&\r\n");
    const raw = new TextEncoder().encode(
      [
        "From: a@example.com",
        "MIME-Version: 1.0",
        "Content-Type: text/plain; charset=utf-8",
        "Content-Transfer-Encoding: base64",
        "",
        b64,
      ].join("\r\n"),
    );
    const before = raw.slice();
    const { message } = await parseMessage(raw, PARSE_OPTIONS);
    expect(message.text === text.replace(/\r\n/g, "\n")).toBe(true);
    expect(Buffer.compare(Buffer.from(raw), Buffer.from(before))).toBe(0);
  });
});
