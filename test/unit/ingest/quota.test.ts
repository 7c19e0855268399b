import { describe, expect, test } from "bun:test";
import { storedBytesOf } from "../../../services/ingest/quota.ts";
import type { ExtractedAttachment } from "../../../services/mail/extract.ts";

const attachment = (id: string, size: number, sha256?: string) =>
  ({ descriptor: { id, size, ...(sha256 ? { sha256 } : {}) } }) as unknown as ExtractedAttachment;

describe("storedBytesOf", () => {
  test("a message without attachments counts its raw size", () => {
    expect(storedBytesOf(1234, [])).toBe(1234);
  });

  test("each distinct attachment counts once, however often the message carries it", () => {
    const same = "a".repeat(64);
    expect(
      storedBytesOf(1000, [
        attachment("att_1", 10, same),
        attachment("att_2", 10, same),
        attachment("att_3", 5),
      ]),
    ).toBe(1015);
  });

  test("attachments without a hash are told apart by id", () => {
    expect(storedBytesOf(0, [attachment("att_1", 3), attachment("att_2", 4)])).toBe(7);
  });

  test("the parsed form's size counts on top of the raw message and attachments", () => {
    expect(storedBytesOf(1000, [attachment("att_1", 10)], 250)).toBe(1260);
  });
});
