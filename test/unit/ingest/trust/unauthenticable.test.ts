/**
 * Header sections mailauth cannot evaluate in bounded time are not given to it: its header parsing is
 * quadratic in bare CRs and in a field's continuation lines (a mutated corpus message with a 267,000-CR
 * run held the event loop for 95 s). They get an `permerror` verdict at once instead.
 */
import { describe, expect, test } from "bun:test";
import {
  authenticateSmtp,
  MAX_FOLDED_LINES,
  unauthenticable,
  unevaluated,
} from "../../../../services/ingest/trust/smtp-auth.ts";

const enc = (s: string) => Buffer.from(s, "latin1");

describe("unauthenticable", () => {
  test("a well-formed header section is evaluated, CRLF or LF line endings alike", () => {
    expect(unauthenticable(enc("From: a@b.test\r\nSubject: x\r\n"), true)).toBeNull();
    expect(unauthenticable(enc("From: a@b.test\nSubject: x\n"), true)).toBeNull();
    expect(unauthenticable(enc(`X-Folded: a${"\r\n b".repeat(MAX_FOLDED_LINES)}\r\n`), true)).toBeNull();
  });

  test.each([
    ["a run of bare CRs", `From: a@b.test\nMessage-Id: <x${"\r".repeat(267_000)}@y>\n`, true, "bare CR"],
    ["CR-only line endings", "From: a@b.test\rSubject: x\r", true, "bare CR"],
    ["a field folded too often", `X-Folded: a${"\r\n b".repeat(MAX_FOLDED_LINES + 1)}\r\n`, true, "folded"],
    ["a section that does not end within the limit", "From: a@b.test\r\n", false, "too large"],
  ])("%s is not evaluated", (_name, header, complete, reason) => {
    expect(unauthenticable(enc(header), complete)).toContain(reason);
  });

  test("such a message's verdict is permerror, with no DKIM signature listed", () => {
    expect(unevaluated()).toMatchObject({ source: "smtp", dkim: [], dmarc: { result: "permerror" } });
  });

  test("authenticateSmtp itself is unchanged for a well-formed message", async () => {
    const resolver = {
      resolve: async () => {
        throw Object.assign(new Error("no DNS here"), { code: "ENOTFOUND" });
      },
    };
    const auth = await authenticateSmtp(
      enc("From: a@b.test\r\nSubject: x\r\n\r\nhi\r\n"),
      { ip: "127.0.0.1", helo: "client.test", mailFrom: "a@b.test" },
      { resolver: resolver as never, mta: "in.localhost" },
    );
    expect(auth.source).toBe("smtp");
  });
});
