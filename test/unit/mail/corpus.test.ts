// The parser over the third-party corpus: real messages from other MIME parsers' test suites, read only
// when MAILHOOK_CORPUS_DIR is set (test/support/paths.ts).
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { MessageParseError, parseMessage } from "../../../services/mail/parse.ts";
import { CORPUS_DIR, corpusEmailFiles, needsCorpus } from "../../support/paths.ts";

describe.skipIf(!CORPUS_DIR)(needsCorpus("the third-party corpus"), () => {
  test("parses every message, failing only with MessageParseError", async () => {
    const counts = { accepted: 0, unparseable: 0, attachments: 0 };
    const unexpected: string[] = [];
    for (const file of corpusEmailFiles()) {
      try {
        const parsed = await parseMessage(readFileSync(file), {
          receivedAt: new Date("2024-01-01T00:00:00Z"),
          inboundDomain: "in.localhost",
          newUuid: () => "00000000-0000-4000-8000-000000000000",
        });
        counts.accepted++;
        counts.attachments += parsed.attachments.length;
        // Invariants every parse must keep, whatever the input.
        expect(parsed.message.message_id).toMatch(/^<.+>$/);
        for (const { descriptor, bytes } of parsed.attachments) {
          expect(descriptor.size).toBe(bytes.length);
          expect(descriptor.filename).not.toMatch(/[/\\]|^\./);
        }
      } catch (error) {
        if (error instanceof MessageParseError) counts.unparseable++;
        else unexpected.push(`${file}: ${String(error)}`);
      }
    }
    console.log(`corpus: ${JSON.stringify(counts)}`);
    expect(unexpected).toEqual([]);
    expect(counts.accepted).toBeGreaterThan(300);
  });
});
