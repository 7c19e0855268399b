/** `strip_attachments_if`: its conditions' checks, and which attachments each condition strips. */
import { describe, expect, test } from "bun:test";
import { applyTransforms, type PipelineStep } from "../../../../services/routing/pipeline.ts";
import { stripAttachmentsIfStep } from "../../../../services/routing/steps/strip-attachments-if.ts";
import { makeMessage } from "../../../support/messages.ts";
import { expectIssues, expectSchemaAgrees, generic, type RejectCase } from "./support.ts";

const strip = (args: Record<string, unknown>): PipelineStep => ({ name: "strip_attachments_if", args });
const ids = (steps: PipelineStep[]) => applyTransforms(steps, makeMessage()).attachments.map((a) => a.id);

describe("strip_attachments_if validation", () => {
  const invalid: RejectCase[] = [
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
      "strip_attachments_if with only an empty mime_in (no condition)",
      { steps: [{ name: "strip_attachments_if", args: { mime_in: [] } }, generic] },
      [{ path: "/pipeline/steps/0/args", message: /at least one condition/ }],
    ],
    [
      "strip_attachments_if with a bad max_size_kb",
      { steps: [{ name: "strip_attachments_if", args: { max_size_kb: -1 } }, generic] },
      [{ path: "/pipeline/steps/0/args/max_size_kb", message: /non-negative number \(KiB\)/ }],
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
    expectIssues(pipeline, expected);
  });
});

describe("strip_attachments_if", () => {
  const stripCases: [string, Record<string, unknown>, string[]][] = [
    ["mime_in strips matching types", { mime_in: ["image/*"] }, ["att_2"]],
    ["mime_in is OR within the list", { mime_in: ["image/png", "application/pdf"] }, []],
    ["min_size_bytes strips files at or above the size", { min_size_bytes: 52_000 }, ["att_1"]],
    ["max_size_bytes strips files at or below the size", { max_size_bytes: 900 }, ["att_2"]],
    ["filename_glob ignores case", { filename_glob: ["*.PDF"] }, ["att_1"]],
    ["filename_regex is RE2, case-insensitive", { filename_regex: "^LOGO\\." }, ["att_2"]],
    ["is_inline strips inline parts", { is_inline: true }, ["att_2"]],
    ["all given conditions must hold", { mime_in: ["image/*"], min_size_bytes: 1000 }, ["att_1", "att_2"]],
    ["max_size_kb strips files larger than the size (KiB)", { max_size_kb: 50 }, ["att_1"]],
    ["max_size_kb keeps a file of exactly the size", { max_size_kb: 900 / 1024 }, ["att_1"]],
    ["max_size_kb 0 strips every non-empty file", { max_size_kb: 0 }, []],
    ["an empty mime_in is no condition", { mime_in: [], max_size_kb: 1 }, ["att_1"]],
    [
      "MIME, size and a regex with its own (?i) flag, all holding",
      { mime_in: ["application/pdf"], max_size_kb: 10, filename_regex: "(?i)\\.(exe|scr|PDF)$" },
      ["att_1"],
    ],
    [
      "conditions together select small inline images",
      { mime_in: ["image/*"], max_size_bytes: 10_240, is_inline: true },
      ["att_2"],
    ],
  ];
  test.each(stripCases)("strip_attachments_if: %s", (_name, args, kept) => {
    expect(ids([strip(args)]).sort()).toEqual([...kept].sort());
  });
});

describe("strip_attachments_if schema", () => {
  test.each([
    [{ mime_in: ["image/*"], max_size_bytes: 10_240, is_inline: true }, true],
    [{ filename_glob: ["*.exe"], filename_regex: "\\.(bat|cmd)$" }, true],
    [{ min_size_bytes: 0, max_size_bytes: 0 }, true],
    [{ mime_in: ["application/octet-stream"], max_size_kb: 1024, filename_regex: "(?i)\\.(exe|scr)$" }, true],
    [{ max_size_kb: 0.5 }, true],
    [{ max_size_kb: -1 }, false],
    [{ max_size_kb: "1" }, false],
    [{}, false],
    [{ mime_in: ["pdf"] }, false],
    [{ filename_glob: "*.exe" }, false],
    [{ filename_glob: [""] }, false],
    [{ filename_regex: "" }, false],
    [{ min_size_bytes: -1 }, false],
    [{ max_size_bytes: 1.5 }, false],
    [{ is_inline: "yes" }, false],
    [{ is_inline: true, size: 1 }, false],
  ] as [Record<string, unknown>, boolean][])("%j: schema and validator both say valid=%p", (args, valid) => {
    expectSchemaAgrees(stripAttachmentsIfStep, args, valid);
  });
});
