/** `remove_fields`: which paths it accepts, and what removing each does. */
import { describe, expect, test } from "bun:test";
import { applyTransforms, type PipelineStep } from "../../../../services/routing/pipeline.ts";
import { removeFieldsStep } from "../../../../services/routing/steps/remove-fields.ts";
import { makeMessage } from "../../../support/messages.ts";
import { expectIssues, expectSchemaAgrees, generic, type RejectCase } from "./support.ts";

const remove = (...paths: string[]): PipelineStep => ({ name: "remove_fields", args: { paths } });

describe("remove_fields validation", () => {
  const invalid: RejectCase[] = [
    [
      "remove_fields without paths",
      { steps: [{ name: "remove_fields", args: {} }, generic] },
      [{ path: "/pipeline/steps/0/args/paths", message: /required/ }],
    ],
    [
      "remove_fields with an empty list",
      { steps: [{ name: "remove_fields", args: { paths: [] } }, generic] },
      [{ path: "/pipeline/steps/0/args/paths", message: /array of 1 to 100/ }],
    ],
    [
      "remove_fields of an unknown or protected field",
      {
        steps: [
          {
            name: "remove_fields",
            args: { paths: ["body", "message_id", "attachments[*].id", "headers.", 3] },
          },
          generic,
        ],
      },
      [
        { path: "/pipeline/steps/0/args/paths/0", message: /cannot remove "body"; removable paths: subject/ },
        { path: "/pipeline/steps/0/args/paths/1", message: /cannot remove "message_id"/ },
        { path: "/pipeline/steps/0/args/paths/2", message: /cannot remove/ },
        { path: "/pipeline/steps/0/args/paths/3", message: /cannot remove/ },
        { path: "/pipeline/steps/0/args/paths/4", message: /must be a string/ },
      ],
    ],
    [
      "remove_fields with an extra argument",
      { steps: [{ name: "remove_fields", args: { paths: ["html"], keep: [] } }, generic] },
      [{ path: "/pipeline/steps/0/args/keep", message: /unknown argument/ }],
    ],
  ];
  test.each(invalid)("rejects %s with its path", (_name, pipeline, expected) => {
    expectIssues(pipeline, expected);
  });
});

describe("remove_fields", () => {
  test("remove_fields clears scalar and list fields", () => {
    const out = applyTransforms(
      [remove("subject", "text", "html", "date", "cc", "reply_to", "from", "to")],
      makeMessage(),
    );
    expect([out.subject, out.text, out.html, out.date]).toEqual(["", "", "", null]);
    expect([out.from, out.to, out.cc, out.reply_to]).toEqual([[], [], [], []]);
  });

  test("remove_fields of attachments leaves an empty list", () => {
    expect(applyTransforms([remove("attachments")], makeMessage()).attachments).toEqual([]);
  });

  test("remove_fields of one header removes it from headers and headers_multi, ignoring case", () => {
    const out = applyTransforms([remove("headers.X-Tag")], makeMessage());
    expect(out.headers["x-tag"]).toBeUndefined();
    expect(out.headers_multi["x-tag"]).toBeUndefined();
    expect(out.headers["x-priority"]).toBe("1 (Highest)");
  });

  test("remove_fields of headers removes them all", () => {
    const out = applyTransforms([remove("headers")], makeMessage());
    expect([out.headers, out.headers_multi]).toEqual([{}, {}]);
  });

  test("remove_fields of attachment metadata clears filenames and drops optional fields", () => {
    const out = applyTransforms(
      [remove("attachments[*].filename", "attachments[*].sha256", "attachments[*].content_id")],
      makeMessage(),
    );
    expect(out.attachments).toEqual([
      { id: "att_2", filename: "", content_type: "application/pdf", size: 52_000, is_inline: false },
      { id: "att_1", filename: "", content_type: "image/png", size: 900, is_inline: true },
    ]);
  });

  test("MailWebhook's attachment paths for protected or absent fields are accepted and change nothing", () => {
    const before = makeMessage();
    const out = applyTransforms(
      [remove("attachments[*].content_type", "attachments[*].size", "attachments[*].blob_key")],
      before,
    );
    expect(out.attachments).toEqual(makeMessage().attachments);
  });
});

describe("remove_fields schema", () => {
  test.each([
    [{ paths: ["html", "headers.x-secret", "attachments[*].sha256", "headers"] }, true],
    [{ paths: ["headers.received", "html", "attachments[*].blob_key", "attachments[*].size"] }, true],
    [{ paths: ["attachments[*].id"] }, false],
    [{}, false],
    [{ paths: [] }, false],
    [{ paths: ["body"] }, false],
    [{ paths: ["headers."] }, false],
    [{ paths: ["headers.a:b"] }, false],
    [{ paths: [3] }, false],
    [{ paths: ["html"], keep: [] }, false],
  ] as [Record<string, unknown>, boolean][])("%j: schema and validator both say valid=%p", (args, valid) => {
    expectSchemaAgrees(removeFieldsStep, args, valid);
  });
});
