import { describe, expect, test } from "bun:test";
import {
  type MapperConfigValidator,
  orderedPipeline,
  type PipelineStep,
  sameJson,
  validatePipeline,
} from "../../../services/routing/pipeline.ts";

const generic = { name: "map.generic_json", args: {} };
const custom = (output: unknown = { x: 1 }) => ({ name: "map.custom_json", args: { version: "v1", output } });

/** Stub mapper validator: rejects any `output.x` that is not a number, with a config-relative pointer. */
const stubMapper: MapperConfigValidator = (config) => {
  const c = config as { version?: unknown; output?: { x?: unknown } };
  const errors = [];
  if (c.version !== "v1") errors.push({ path: "/version", message: "must be v1" });
  if (typeof c.output?.x !== "number") errors.push({ path: "/output/x", message: "unknown operator" });
  return errors.length === 0 ? { ok: true } : { ok: false, errors };
};

describe("validatePipeline", () => {
  const valid: [string, unknown][] = [
    ["the generic mapper alone", { steps: [generic] }],
    ["a custom mapper the mapper validator accepts", { steps: [custom()] }],
    [
      "transforms before the mapper",
      {
        steps: [
          {
            name: "remove_fields",
            args: { paths: ["html", "headers.x-secret", "attachments[*].sha256", "headers"] },
          },
          {
            name: "strip_attachments_if",
            args: { mime_in: ["image/*"], max_size_bytes: 10_240, is_inline: true },
          },
          {
            name: "strip_attachments_if",
            args: { filename_glob: ["*.exe"], filename_regex: "\\.(bat|cmd)$" },
          },
          { name: "strip_attachments_if", args: { min_size_bytes: 0, max_size_bytes: 0 } },
          generic,
        ],
      },
    ],
  ];
  test.each(valid)("accepts %s", (_name, pipeline) => {
    expect(validatePipeline(pipeline, { validateMapperConfig: stubMapper })).toEqual([]);
  });

  const invalid: [string, unknown, { path: string; message: RegExp }[]][] = [
    ["a non-object", [generic], [{ path: "/pipeline", message: /must be an object/ }]],
    ["missing steps", {}, [{ path: "/pipeline/steps", message: /array/ }]],
    [
      "an extra top-level key",
      { steps: [generic], version: 2 },
      [{ path: "/pipeline/version", message: /unknown key/ }],
    ],
    ["no steps", { steps: [] }, [{ path: "/pipeline/steps", message: /1 to 20 steps/ }]],
    [
      "too many steps",
      { steps: Array(21).fill(generic) },
      [{ path: "/pipeline/steps", message: /1 to 20 steps/ }],
    ],
    [
      "no map step",
      { steps: [{ name: "remove_fields", args: { paths: ["html"] } }] },
      [{ path: "/pipeline/steps", message: /must end with a map\.\* step/ }],
    ],
    [
      "a map step that is not last",
      { steps: [generic, { name: "remove_fields", args: { paths: ["html"] } }] },
      [{ path: "/pipeline/steps/0/name", message: /must be the last step/ }],
    ],
    [
      "two map steps",
      { steps: [generic, custom()] },
      [{ path: "/pipeline/steps/0/name", message: /exactly one map/ }],
    ],
    [
      "an unknown step",
      { steps: [{ name: "html_to_text", args: {} }, generic] },
      [{ path: "/pipeline/steps/0/name", message: /unknown step "html_to_text"/ }],
    ],
    [
      "an unknown map step (still counted as the map)",
      { steps: [{ name: "map.slack_simple", args: {} }] },
      [{ path: "/pipeline/steps/0/name", message: /unknown step/ }],
    ],
    [
      "a step that is not an object",
      { steps: ["map.generic_json"] },
      [
        { path: "/pipeline/steps/0", message: /must be an object/ },
        { path: "/pipeline/steps", message: /must end with a map/ },
      ],
    ],
    [
      "a step without a name",
      { steps: [{ args: {} }, generic] },
      [{ path: "/pipeline/steps/0/name", message: /name/ }],
    ],
    [
      "an extra key on a step",
      { steps: [{ ...generic, when: "x" }] },
      [{ path: "/pipeline/steps/0/when", message: /unknown key/ }],
    ],
    [
      "args that are not an object",
      { steps: [{ name: "map.generic_json", args: [] }] },
      [{ path: "/pipeline/steps/0/args", message: /must be an object/ }],
    ],
    [
      "missing args",
      { steps: [{ name: "map.generic_json" }] },
      [{ path: "/pipeline/steps/0/args", message: /object/ }],
    ],
    [
      "arguments to map.generic_json",
      { steps: [{ name: "map.generic_json", args: { pretty: true } }] },
      [{ path: "/pipeline/steps/0/args/pretty", message: /unknown argument/ }],
    ],
    [
      "mapper errors, re-rooted under the step args",
      { steps: [{ name: "remove_fields", args: { paths: ["html"] } }, custom("no")] },
      [{ path: "/pipeline/steps/1/args/output/x", message: /unknown operator/ }],
    ],
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
            args: { paths: ["body", "message_id", "attachments[*].size", "headers.", 3] },
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
    [
      "strip_attachments_if without a condition",
      { steps: [{ name: "strip_attachments_if", args: {} }, generic] },
      [{ path: "/pipeline/steps/0/args", message: /at least one condition/ }],
    ],
    [
      "strip_attachments_if with bad conditions",
      {
        steps: [
          {
            name: "strip_attachments_if",
            args: {
              mime_in: ["pdf"],
              filename_glob: "*.exe",
              filename_regex: "(",
              min_size_bytes: -1,
              max_size_bytes: 1.5,
              is_inline: "yes",
              size: 1,
            },
          },
          generic,
        ],
      },
      [
        { path: "/pipeline/steps/0/args/size", message: /unknown argument/ },
        { path: "/pipeline/steps/0/args/mime_in/0", message: /MIME type/ },
        { path: "/pipeline/steps/0/args/filename_glob", message: /array/ },
        { path: "/pipeline/steps/0/args/filename_regex", message: /invalid RE2/ },
        { path: "/pipeline/steps/0/args/min_size_bytes", message: /non-negative integer/ },
        { path: "/pipeline/steps/0/args/max_size_bytes", message: /non-negative integer/ },
        { path: "/pipeline/steps/0/args/is_inline", message: /boolean/ },
      ],
    ],
    [
      "strip_attachments_if with min above max",
      {
        steps: [{ name: "strip_attachments_if", args: { min_size_bytes: 10, max_size_bytes: 5 } }, generic],
      },
      [{ path: "/pipeline/steps/0/args/min_size_bytes", message: /must not exceed/ }],
    ],
  ];
  test.each(invalid)("rejects %s with its path", (_name, pipeline, expected) => {
    const issues = validatePipeline(pipeline, { validateMapperConfig: stubMapper });
    expect(issues.map((i) => i.path)).toEqual(expected.map((e) => e.path));
    issues.forEach((issue, i) => {
      expect(issue.message).toMatch(expected[i]!.message);
    });
  });

  test("uses the given base path and re-roots a mapper error at the args root", () => {
    const rootError: MapperConfigValidator = () => ({
      ok: false,
      errors: [{ path: "", message: "bad config" }],
    });
    expect(
      validatePipeline({ steps: [custom()] }, { validateMapperConfig: rootError }, "/route/pipeline"),
    ).toEqual([{ path: "/route/pipeline/steps/0/args", message: "bad config" }]);
  });

  test("without a mapper validator, map.custom_json args are only checked to be an object", () => {
    expect(validatePipeline({ steps: [custom("anything")] })).toEqual([]);
  });

  test("the exported step type describes a validated step", () => {
    const step: PipelineStep = { name: "map.generic_json", args: {} };
    expect(validatePipeline({ steps: [step] })).toEqual([]);
  });
});

describe("orderedPipeline", () => {
  const written = { steps: [{ name: "map.custom_json", args: { version: "v1", output: { z: 1, a: 2 } } }] };
  // What jsonb hands back: the same pipeline with its keys sorted.
  const sorted = { steps: [{ args: { output: { a: 2, z: 1 }, version: "v1" }, name: "map.custom_json" }] };

  test("the stored text, key order kept, when it holds the same pipeline as the jsonb copy", () => {
    const p = orderedPipeline({ pipeline: sorted as never, pipeline_text: JSON.stringify(written) });
    expect(JSON.stringify(p)).toBe(JSON.stringify(written));
  });

  test("the jsonb copy when the text is missing, unreadable or stale (changed by a version without it)", () => {
    const changed = { steps: [{ args: { output: { b: 3 }, version: "v1" }, name: "map.custom_json" }] };
    for (const text of [undefined, null, "{not json", JSON.stringify(written)]) {
      expect(orderedPipeline({ pipeline: changed as never, pipeline_text: text })).toBe(changed as never);
    }
  });

  test("sameJson ignores key order only", () => {
    expect(sameJson({ a: [1, { b: 2, c: 3 }] }, { a: [1, { c: 3, b: 2 }] })).toBe(true);
    expect(sameJson({ a: [1, 2] }, { a: [2, 1] })).toBe(false);
    expect(sameJson({ a: 1 }, { a: 1, b: undefined })).toBe(false);
    expect(sameJson([1], { 0: 1 })).toBe(false);
    expect(sameJson(null, {})).toBe(false);
  });
});
