/**
 * `map.raw_mime` (docs/receivers.md § Raw MIME): the POST body is the stored raw message, byte for byte,
 * sent as `Content-Type: message/rfc822` and signed over those bytes like any delivery. Transform steps
 * before it have no effect on the body: the raw message is what was received. It takes no arguments.
 */
import { Type } from "@sinclair/typebox";
import type { ValidationIssue } from "../issues.ts";
import { rejectUnknownArgs } from "./args.ts";
import type { BytesBody, MapStep } from "./types.ts";

const RawMimeArgs = Type.Object({}, { additionalProperties: false, examples: [{}] });

/** The `map.raw_mime` step. */
export const rawMimeStep = {
  name: "map.raw_mime",
  kind: "map",
  summary: "POSTs the raw message as received (message/rfc822), byte for byte.",
  args: RawMimeArgs,
  validate(args, path) {
    const issues: ValidationIssue[] = [];
    rejectUnknownArgs(args, [], path, issues);
    return issues;
  },
  async build(_args, _input, deps): Promise<BytesBody> {
    if (deps.readRaw === undefined) throw new Error("the raw message is not available here");
    return { kind: "bytes", contentType: "message/rfc822", bytes: await deps.readRaw() };
  },
} as const satisfies MapStep<typeof RawMimeArgs>;
