/**
 * `map.generic_json` (docs/routing.md § The generic@1 body): the final step that POSTs the generic@1
 * body, built deterministically by generic-body.ts. It takes no arguments.
 */
import { Type } from "@sinclair/typebox";
import { buildGenericBody } from "../generic-body.ts";
import type { ValidationIssue } from "../issues.ts";
import { rejectUnknownArgs } from "./args.ts";
import type { JsonBody, MapStep } from "./types.ts";

/** The arguments: none. */
const GenericJsonArgs = Type.Object({}, { additionalProperties: false, examples: [{}] });

/** The `map.generic_json` step. */
export const genericJsonStep = {
  name: "map.generic_json",
  kind: "map",
  summary: "POSTs the generic@1 body: the message with fixed key order, sorted lists and whole seconds.",
  args: GenericJsonArgs,
  validate(args, path) {
    const issues: ValidationIssue[] = [];
    rejectUnknownArgs(args, [], path, issues);
    return issues;
  },
  build(_args, input): JsonBody {
    // generic@1 names its event; a preview has none to name.
    if (input.event === null) throw new Error("the generic@1 body needs an event");
    const value = buildGenericBody({
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
