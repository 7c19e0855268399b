/**
 * Route attachment policies (mail/policy.ts): the service-wide default decides exactly as the MIME
 * policy always did, and `strip`/`deliver` note the offending attachments instead of discarding.
 */
import { describe, expect, test } from "bun:test";
import {
  attachmentFindings,
  attachmentPolicyProblems,
  checkMimePolicy,
  completeAttachmentPolicy,
  isNotedAttachment,
  judgeAttachments,
} from "../../../services/mail/policy.ts";

const PDF = new TextEncoder().encode("%PDF-1.4\n%%EOF\n");
const TEXT = new TextEncoder().encode("just words");

function att(id: string, filename: string, content_type: string, bytes: Uint8Array) {
  return { descriptor: { id, filename, content_type, size: bytes.byteLength, is_inline: false }, bytes };
}

const CASES = {
  none: [],
  fine: [att("att_2", "a.pdf", "application/pdf", PDF), att("att_3", "b.txt", "text/plain", TEXT)],
  disallowed: [att("att_2", "v.mp4", "video/mp4", TEXT)],
  mismatch: [att("att_2", "x.png", "image/png", PDF)],
  both: [att("att_2", "x.png", "image/png", PDF), att("att_3", "v.mp4", "video/mp4", TEXT)],
  forward: [att("att_2", "fwd.eml", "message/rfc822", TEXT)],
};

describe("judgeAttachments", () => {
  test.each(Object.entries(CASES))(
    "the default policy decides %s as checkMimePolicy does",
    async (_name, list) => {
      const old = await checkMimePolicy(list);
      const verdict = judgeAttachments(await attachmentFindings(list));
      expect(verdict.discard).toBe(old?.reason ?? null);
      expect(verdict.notes).toEqual([]);
    },
  );

  test("strip and deliver note each offending attachment with its reason", async () => {
    const findings = await attachmentFindings([...CASES.both, ...CASES.forward, ...CASES.fine]);
    const strip = judgeAttachments(
      findings,
      completeAttachmentPolicy({ on_disallowed: "strip", on_mismatch: "deliver" }),
    );
    expect(strip.discard).toBeNull();
    expect(strip.notes.map((n) => [n.filename, n.reason, n.action])).toEqual([
      ["x.png", "content_type_mismatch", "deliver"],
      ["v.mp4", "disallowed_attachment_type", "strip"],
      ["fwd.eml", "disallowed_attachment_type", "strip"],
    ]);
    const allowMessages = judgeAttachments(
      findings,
      completeAttachmentPolicy({
        allowed_prefixes: ["application/", "image/", "text/", "message/"],
        on_disallowed: "strip",
        on_mismatch: "discard",
      }),
    );
    expect(allowMessages.discard).toBe("content_type_mismatch");
  });

  test("validation names each problem; stored ids with the conflict suffix still match their note", () => {
    expect(attachmentPolicyProblems([], "/p")).toEqual([
      { path: "/p", message: expect.stringMatching(/object/) },
    ]);
    expect(
      attachmentPolicyProblems({ allowed_prefixes: "image/", on_mismatch: "keep" }, "/p").map((p) => p.path),
    ).toEqual(["/p/allowed_prefixes", "/p/on_mismatch"]);
    expect(attachmentPolicyProblems({ allowed_prefixes: [], on_disallowed: "deliver" }, "/p")).toEqual([]);
    expect(isNotedAttachment("att_2", "att_2")).toBe(true);
    expect(isNotedAttachment("att_2-0123456789ab", "att_2")).toBe(true);
    expect(isNotedAttachment("att_2_1", "att_2")).toBe(false);
    expect(isNotedAttachment("att_2-x", "att_2")).toBe(false);
  });
});
