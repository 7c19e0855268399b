import { describe, expect, test } from "bun:test";
import {
  orderedPipeline,
  type PipelineStep,
  sameJson,
  validatePipeline,
} from "../../../services/routing/pipeline.ts";
import { custom, generic, stubMapper } from "./steps/support.ts";

// Pipeline-level rules; each step's own argument checks are tested beside it in steps/.

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
      { steps: [{ name: "summarize_text", args: {} }, generic] },
      [{ path: "/pipeline/steps/0/name", message: /unknown step "summarize_text"/ }],
    ],
    [
      "an unknown map step (still counted as the map)",
      { steps: [{ name: "map.discord_simple", args: {} }] },
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
  ];
  test.each(invalid)("rejects %s with its path", (_name, pipeline, expected) => {
    const issues = validatePipeline(pipeline, { validateMapperConfig: stubMapper });
    expect(issues.map((i) => i.path)).toEqual(expected.map((e) => e.path));
    issues.forEach((issue, i) => {
      expect(issue.message).toMatch(expected[i]!.message);
    });
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
