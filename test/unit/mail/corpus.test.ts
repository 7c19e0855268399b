import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { MessageParseError, parseMessage } from "../../../services/mail/parse.ts";

const CORPUS = join(import.meta.dir, "../../../../shared/corpus/emails");

function corpusFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return corpusFiles(path);
    return name.endsWith(".md") ? [] : [path];
  });
}

describe("the third-party corpus", () => {
  test.skipIf(!statSync(CORPUS, { throwIfNoEntry: false }))(
    "parses every message, failing only with MessageParseError",
    async () => {
      const counts = { accepted: 0, unparseable: 0, attachments: 0 };
      const unexpected: string[] = [];
      for (const file of corpusFiles(CORPUS)) {
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
    },
  );
});
