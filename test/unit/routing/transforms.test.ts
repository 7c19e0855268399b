import { describe, expect, test } from "bun:test";
import { applyTransforms, type PipelineStep } from "../../../services/routing/pipeline.ts";
import { makeMessage } from "../../support/messages.ts";

const remove = (...paths: string[]): PipelineStep => ({ name: "remove_fields", args: { paths } });
const strip = (args: Record<string, unknown>): PipelineStep => ({ name: "strip_attachments_if", args });
const ids = (steps: PipelineStep[]) => applyTransforms(steps, makeMessage()).attachments.map((a) => a.id);

describe("applyTransforms", () => {
  test("never modifies the input message", () => {
    const input = makeMessage();
    const snapshot = structuredClone(input);
    applyTransforms(
      [
        remove("subject", "text", "html", "date", "from", "to", "cc", "reply_to", "headers.x-tag"),
        remove("attachments[*].filename", "attachments[*].sha256", "attachments[*].content_id"),
        strip({ mime_in: ["image/*"] }),
        remove("headers", "attachments"),
      ],
      input,
    );
    expect(input).toEqual(snapshot);
  });

  test("skips the map step and returns an equal message when there are no transforms", () => {
    const input = makeMessage();
    expect(applyTransforms([{ name: "map.generic_json", args: {} }], input)).toEqual(input);
  });

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

  const stripCases: [string, Record<string, unknown>, string[]][] = [
    ["mime_in strips matching types", { mime_in: ["image/*"] }, ["att_2"]],
    ["mime_in is OR within the list", { mime_in: ["image/png", "application/pdf"] }, []],
    ["min_size_bytes strips files at or above the size", { min_size_bytes: 52_000 }, ["att_1"]],
    ["max_size_bytes strips files at or below the size", { max_size_bytes: 900 }, ["att_2"]],
    ["filename_glob ignores case", { filename_glob: ["*.PDF"] }, ["att_1"]],
    ["filename_regex is RE2, case-insensitive", { filename_regex: "^LOGO\\." }, ["att_2"]],
    ["is_inline strips inline parts", { is_inline: true }, ["att_2"]],
    ["all given conditions must hold", { mime_in: ["image/*"], min_size_bytes: 1000 }, ["att_1", "att_2"]],
    [
      "conditions together select small inline images",
      { mime_in: ["image/*"], max_size_bytes: 10_240, is_inline: true },
      ["att_2"],
    ],
  ];
  test.each(stripCases)("strip_attachments_if: %s", (_name, args, kept) => {
    expect(ids([strip(args)]).sort()).toEqual([...kept].sort());
  });

  test("steps run in order", () => {
    const out = applyTransforms(
      [remove("attachments[*].filename"), strip({ filename_glob: ["logo*"] })],
      makeMessage(),
    );
    expect(out.attachments).toHaveLength(2);
  });

  test("an unknown step is a programming error", () => {
    expect(() => applyTransforms([{ name: "html_to_text", args: {} }], makeMessage())).toThrow(
      /unknown pipeline step/,
    );
  });
});
