import { describe, expect, test } from "bun:test";
import { parse } from "content-disposition";
import { attachmentDisposition } from "../../../services/attachments/disposition.ts";

/** Printable ASCII only: nothing a header could be split or smuggled with (RFC 9110 §5.5). */
const VISIBLE_ASCII = /^[\u0020-\u007e]+$/;

describe("attachmentDisposition", () => {
  const cases: { name: string; input: string; fallback: string; decoded: string }[] = [
    { name: "plain ASCII", input: "report.pdf", fallback: "report.pdf", decoded: "report.pdf" },
    { name: "spaces", input: "Q3 report.pdf", fallback: "Q3 report.pdf", decoded: "Q3 report.pdf" },
    { name: "double quotes", input: 'say "hi".txt', fallback: "say _hi_.txt", decoded: 'say "hi".txt' },
    { name: "backslash", input: "a\\b.txt", fallback: "a_b.txt", decoded: "a_b.txt" },
    {
      name: "CRLF injection",
      input: "a\r\nSet-Cookie: x=1.txt",
      fallback: "a__Set-Cookie: x=1.txt",
      decoded: "a__Set-Cookie: x=1.txt",
    },
    { name: "NUL and tab", input: "a\u0000b\tc.txt", fallback: "a_b_c.txt", decoded: "a_b_c.txt" },
    {
      name: "path separators",
      input: "../../etc/passwd",
      fallback: ".._.._etc_passwd",
      decoded: ".._.._etc_passwd",
    },
    { name: "accents", input: "résumé.pdf", fallback: "resume.pdf", decoded: "résumé.pdf" },
    {
      name: "decomposed accents are NFC'd",
      input: "re\u0301sume\u0301.pdf",
      fallback: "resume.pdf",
      decoded: "résumé.pdf",
    },
    { name: "CJK", input: "報告書.pdf", fallback: "___.pdf", decoded: "報告書.pdf" },
    { name: "emoji", input: "🎉 party.png", fallback: "_ party.png", decoded: "🎉 party.png" },
    {
      name: "percent sequences",
      input: "100%25 done.txt",
      fallback: "100_25 done.txt",
      decoded: "100%25 done.txt",
    },
    {
      name: "semicolons and equals",
      input: "a; filename=evil.exe",
      fallback: "a; filename=evil.exe",
      decoded: "a; filename=evil.exe",
    },
    { name: "empty", input: "", fallback: "download", decoded: "download" },
    { name: "only dots", input: "..", fallback: "download", decoded: "download" },
    { name: "only non-ASCII", input: "日本", fallback: "download", decoded: "日本" },
  ];

  for (const c of cases) {
    test(`${c.name}: ${JSON.stringify(c.input)}`, () => {
      const header = attachmentDisposition(c.input);
      expect(header).toMatch(VISIBLE_ASCII);
      expect(header).toStartWith(`attachment; filename="${c.fallback}"; filename*=UTF-8''`);
      // Round-trip through an independent RFC 6266 parser: filename* wins over the fallback.
      const parsed = parse(header);
      expect(parsed.type).toBe("attachment");
      expect(parsed.parameters.filename).toBe(c.decoded);
      // Headers() rejects CR/LF/NUL; constructing one proves the value is a legal field value.
      expect(new Headers({ "Content-Disposition": header }).get("Content-Disposition")).toBe(header);
    });
  }
});
