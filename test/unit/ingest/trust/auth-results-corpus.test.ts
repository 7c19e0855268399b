// The trusted-header rule over the third-party corpus (real messages, read only when MAILHOOK_CORPUS_DIR
// is set): trusting the servers that stamped them, every message with their field is read without an
// exception and only with results in RFC 8601's words; without trusted ids, nothing is trusted.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { AUTH_RESULTS } from "../../../../mapper/types.ts";
import { headerSection, trustedHeaderAuth } from "../../../../services/ingest/trust/auth-results.ts";
import { CORPUS_DIR, corpusEmailFiles, needsCorpus } from "../../../support/paths.ts";

const STAMPERS = ["mx.google.com", "mx4.messagingengine.com", "mx.ethereal.email", "mxs.test.it"];

describe.skipIf(!CORPUS_DIR)(needsCorpus("trusted Authentication-Results over the corpus"), () => {
  test("real messages' fields of trusted servers give verdicts in RFC 8601's words", () => {
    let trusted = 0;
    for (const file of corpusEmailFiles()) {
      const header = headerSection(readFileSync(file));
      expect(trustedHeaderAuth(header, []).source).toBe("none");
      const auth = trustedHeaderAuth(header, STAMPERS);
      if (auth.source === "none") continue;
      trusted++;
      for (const r of [
        auth.spf.result,
        auth.dmarc.result,
        auth.arc.result,
        ...auth.dkim.map((d) => d.result),
      ]) {
        expect(AUTH_RESULTS).toContain(r);
      }
    }
    // Gmail's and Fastmail's stamps in the corpus sit in their messages' trace sections.
    expect(trusted).toBeGreaterThanOrEqual(10);
  });
});
