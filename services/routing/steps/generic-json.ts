/**
 * `map.generic_json` (docs/routing.md § The generic@1 body, § The generic@2 body): the final step that
 * POSTs the generic body, built deterministically by generic-body.ts. `{}` (or `{"version": "1"}`)
 * builds generic@1, `{"version": "2"}` generic@2.
 */
import { Type } from "@sinclair/typebox";
import { buildGenericBody, buildGenericBodyV2 } from "../generic-body.ts";
import { pointer, type ValidationIssue } from "../issues.ts";
import { rejectUnknownArgs } from "./args.ts";
import type { JsonBody, MapStep } from "./types.ts";

/** The schema versions the step builds. */
export const GENERIC_VERSIONS = ["1", "2"] as const;

/** The arguments: the schema version, "1" when omitted. */
const GenericJsonArgs = Type.Object(
  {
    version: Type.Optional(
      Type.Union(
        GENERIC_VERSIONS.map((v) => Type.Literal(v)),
        { description: 'the body\'s schema: "1" (generic@1, the default) or "2" (generic@2)' },
      ),
    ),
  },
  { additionalProperties: false, examples: [{}, { version: "2" }] },
);

/** The `map.generic_json` step. */
export const genericJsonStep = {
  name: "map.generic_json",
  kind: "map",
  summary:
    "POSTs the generic@1 (or, with version 2, generic@2) body: the message with fixed key order, sorted lists and whole seconds.",
  args: GenericJsonArgs,
  validate(args, path) {
    const issues: ValidationIssue[] = [];
    rejectUnknownArgs(args, ["version"], path, issues);
    if (args.version !== undefined && !(GENERIC_VERSIONS as readonly unknown[]).includes(args.version)) {
      issues.push({ path: pointer(path, "version"), message: 'must be "1" or "2"' });
    }
    return issues;
  },
  build(args, input): JsonBody {
    // The generic body names its event; a preview has none to name.
    if (input.event === null) throw new Error("the generic body needs an event");
    const build = args.version === "2" ? buildGenericBodyV2 : buildGenericBody;
    const value = build({
      event: {
        id: input.event.id,
        project_id: input.projectId,
        route_id: input.event.routeId,
        created_at: input.event.createdAt,
      },
      message: input.message,
      rawSizeBytes: input.rawSizeBytes,
      sourceType: input.sourceType,
      ...(input.envelope ? { envelope: input.envelope } : {}),
    });
    return { kind: "json", contentType: "application/json", value };
  },
} as const satisfies MapStep<typeof GenericJsonArgs>;
