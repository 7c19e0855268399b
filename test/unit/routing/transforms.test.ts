/** applyTransforms: the transform steps run in order over a copy; map steps are left to the caller. */
import { describe, expect, test } from "bun:test";
import { applyTransforms, type PipelineStep } from "../../../services/routing/pipeline.ts";
import { makeMessage } from "../../support/messages.ts";

const remove = (...paths: string[]): PipelineStep => ({ name: "remove_fields", args: { paths } });
const strip = (args: Record<string, unknown>): PipelineStep => ({ name: "strip_attachments_if", args });

// What each step does is tested beside it in steps/.
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

  test("steps run in order", () => {
    const out = applyTransforms(
      [remove("attachments[*].filename"), strip({ filename_glob: ["logo*"] })],
      makeMessage(),
    );
    expect(out.attachments).toHaveLength(2);
  });

  test("an unknown step is a programming error", () => {
    expect(() => applyTransforms([{ name: "summarize_text", args: {} }], makeMessage())).toThrow(
      /unknown pipeline step/,
    );
  });
});
