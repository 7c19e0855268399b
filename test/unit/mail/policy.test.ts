import { describe, expect, test } from "bun:test";
import type { AttachmentDescriptor } from "../../../services/lib/message.ts";
import {
  checkMimePolicy,
  declaredTypeAgrees,
  isAllowedAttachmentType,
  mimeDiscardError,
} from "../../../services/mail/policy.ts";
import { TINY_PNG } from "../../support/raw-mail.ts";

const PDF = new TextEncoder().encode("%PDF-1.4\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n");
const GIF = new Uint8Array([0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 1, 0, 1, 0, 0, 0, 0, 0x3b]);
const TEXT = new TextEncoder().encode("hello, world\r\nplain text that no magic number matches\r\n");

function attachment(id: string, contentType: string, bytes: Uint8Array) {
  const descriptor: AttachmentDescriptor = {
    id,
    filename: `${id}.bin`,
    content_type: contentType,
    size: bytes.length,
    is_inline: false,
  };
  return { descriptor, bytes };
}

describe("checkMimePolicy", () => {
  test("passes attachments whose declared type is allowed and agrees with the content", async () => {
    const result = await checkMimePolicy([
      attachment("att_2", "image/png", TINY_PNG),
      attachment("att_3", "application/pdf", PDF),
      attachment("att_4", "text/plain", TEXT),
      attachment("att_5", "application/octet-stream", GIF),
      attachment(
        "att_6",
        "image/jpg",
        new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46, 0x49, 0x46]),
      ),
    ]);
    expect(result).toBeNull();
  });

  test("passes a message without attachments", async () => {
    expect(await checkMimePolicy([])).toBeNull();
  });

  test.each([
    ["video/mp4"],
    ["audio/mpeg"],
    ["message/rfc822"],
    ["model/stl"],
    ["multipart/mixed"],
    ["font/woff"],
  ])("discards a %s attachment as disallowed_attachment_type", async (type) => {
    const violation = await checkMimePolicy([
      attachment("att_2", "text/plain", TEXT),
      attachment("att_3", type, TEXT),
    ]);
    expect(violation).toMatchObject({ reason: "disallowed_attachment_type", attachment_id: "att_3" });
    expect(violation?.detail).toContain(type);
  });

  test.each([
    ["a PNG declared as image/jpeg", "image/jpeg", TINY_PNG, "image/png"],
    ["a PDF declared as text/plain", "text/plain", PDF, "application/pdf"],
    ["a GIF declared as application/pdf", "application/pdf", GIF, "image/gif"],
  ])("discards %s as content_type_mismatch", async (_label, declared, bytes, detected) => {
    const violation = await checkMimePolicy([attachment("att_2", declared, bytes)]);
    expect(violation).toMatchObject({ reason: "content_type_mismatch", attachment_id: "att_2" });
    expect(violation?.detail).toContain(detected);
  });

  test("reports a disallowed type before an earlier mismatch", async () => {
    const violation = await checkMimePolicy([
      attachment("att_2", "image/jpeg", TINY_PNG),
      attachment("att_3", "video/mp4", TEXT),
    ]);
    expect(violation?.reason).toBe("disallowed_attachment_type");
    expect(violation?.attachment_id).toBe("att_3");
  });

  test("names the discard reason as the spec's last_error", () => {
    const violation = { reason: "content_type_mismatch", attachment_id: "att_2", detail: "" } as const;
    expect(mimeDiscardError(violation)).toBe("mime_discard:content_type_mismatch");
  });
});

describe("isAllowedAttachmentType", () => {
  test.each([
    ["application/pdf", true],
    ["IMAGE/PNG", true],
    ["text/calendar", true],
    ["video/mp4", false],
    ["message/rfc822", false],
    ["applicationx/pdf", false],
  ])("%p → %p", (type, allowed) => {
    expect(isAllowedAttachmentType(type)).toBe(allowed);
  });
});

describe("declaredTypeAgrees", () => {
  test.each([
    ["image/jpg", "image/jpeg"],
    ["image/pjpeg", "image/jpeg"],
    ["image/png", "image/apng"],
    ["application/x-zip-compressed", "application/zip"],
    ["application/zip", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"],
    ["application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "application/zip"],
    ["application/vnd.oasis.opendocument.text", "application/zip"],
    ["application/epub+zip", "application/zip"],
    ["application/msword", "application/x-cfb"],
    ["application/vnd.ms-excel", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"],
    ["application/msword", "application/rtf"],
    ["application/octet-stream", "application/x-msdownload"],
    ["application/x-gzip", "application/gzip"],
    ["text/rtf", "application/rtf"],
    ["text/plain", "application/xml"],
    ["text/xml", "application/xml"],
    ["image/svg+xml", "application/xml"],
    ["application/ics", "text/calendar"],
    ["text/plain", "application/pgp-encrypted"],
    ["image/heic", "image/heif"],
  ])("accepts declared %p for detected %p", (declared, detected) => {
    expect(declaredTypeAgrees(declared, detected)).toBe(true);
  });

  test.each([
    ["image/jpeg", "image/png"],
    ["text/plain", "application/pdf"],
    ["application/pdf", "application/x-msdownload"],
    ["application/zip", "application/x-msdownload"],
    ["image/png", "application/zip"],
    ["application/vnd.openxmlformats-officedocument.wordprocessingml.document", "application/x-msdownload"],
    ["text/html", "image/gif"],
  ])("rejects declared %p for detected %p", (declared, detected) => {
    expect(declaredTypeAgrees(declared, detected)).toBe(false);
  });
});
