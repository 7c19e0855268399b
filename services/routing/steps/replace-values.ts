/**
 * `replace_values` (docs/routing.md § `replace_values`): sets the subject, the text or HTML body, or a
 * header to a literal or a small template. `{{ path }}` placeholders read the message as it was before
 * the step (so the order of the keys of `set` never matters) and a few facts of the run (`ctx.*`). A
 * placeholder whose path is not one of the supported ones is a validation error; one whose value is
 * absent at run time (a header the message lacks, `to[3]` of a message with one recipient, `ctx.route_id`
 * in a preview) is left as written.
 */
import { type Static, Type } from "@sinclair/typebox";
import type { NormalizedMessage } from "../../lib/message.ts";
import { HEADER_NAME, isPlainObject, pointer, type ValidationIssue } from "../issues.ts";
import { ARG_LIMITS, rejectUnknownArgs } from "./args.ts";
import type { TransformContext, TransformStep } from "./types.ts";

/** Longest value accepted (a whole text body may be set). */
export const MAX_VALUE_LENGTH = 100_000;

/** Fields `set` may write, besides `headers.<name>`. */
const WRITABLE = ["subject", "text", "html"] as const;

/** `{{ path }}`, with optional spaces inside the braces. */
const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;

/** Template paths besides `headers.<name>` and the indexed address paths. */
const CTX_PATHS = ["ctx.route_id", "ctx.project_id", "ctx.source_type", "ctx.raw_size_bytes"] as const;
const ADDRESS_PATH = /^(from|to|cc)\[(\d{1,4})\]\.(email|name)$/;

const ReplaceValuesArgs = Type.Object(
  {
    set: Type.Record(
      Type.String({ description: 'subject, text, html or "headers.<name>"' }),
      Type.Union([Type.String({ maxLength: MAX_VALUE_LENGTH }), Type.Number(), Type.Boolean()]),
      { minProperties: 1, maxProperties: ARG_LIMITS.maxListLength },
    ),
  },
  {
    additionalProperties: false,
    examples: [
      { set: { subject: "Order {{ headers.x-order-id }}", "headers.x-route": "{{ ctx.route_id }}" } },
    ],
  },
);

type ReplaceValuesStepArgs = Static<typeof ReplaceValuesArgs>;

/** Null when `path` may be written by `set`, else the reason. */
function writableError(path: string): string | null {
  if ((WRITABLE as readonly string[]).includes(path)) return null;
  if (path.startsWith("headers.") && HEADER_NAME.test(path.slice("headers.".length))) return null;
  return `cannot set "${path}"; writable paths: ${WRITABLE.join(", ")}, headers.<name>`;
}

/** Null when `path` is a supported template path, else the reason. */
function templatePathError(path: string): string | null {
  if ((WRITABLE as readonly string[]).includes(path)) return null;
  if ((CTX_PATHS as readonly string[]).includes(path)) return null;
  if (ADDRESS_PATH.test(path)) return null;
  if (path.startsWith("headers.") && HEADER_NAME.test(path.slice("headers.".length))) return null;
  return `unknown placeholder "{{ ${path} }}"; supported: subject, text, html, headers.<name>, from[i].email, from[i].name, to[i].…, cc[i].…, ${CTX_PATHS.join(", ")}`;
}

/** The value of template `path` in `m` and `ctx`, or undefined when it has none. */
function resolve(path: string, m: NormalizedMessage, ctx: TransformContext): string | undefined {
  switch (path) {
    case "subject":
      return m.subject;
    case "text":
      return m.text;
    case "html":
      return m.html;
    case "ctx.route_id":
      return ctx.routeId ?? undefined;
    case "ctx.project_id":
      return ctx.projectId ?? undefined;
    case "ctx.source_type":
      return ctx.sourceType ?? undefined;
    case "ctx.raw_size_bytes":
      return ctx.rawSizeBytes === null ? undefined : String(ctx.rawSizeBytes);
  }
  const address = ADDRESS_PATH.exec(path);
  if (address !== null) {
    const [, list, index, field] = address as unknown as [
      string,
      "from" | "to" | "cc",
      string,
      "email" | "name",
    ];
    return (m[list] ?? [])[Number(index)]?.[field];
  }
  // headers.<name>: the name lowercased; a name written with `_` also finds the header spelled with `-`.
  const name = path.slice("headers.".length).toLowerCase();
  return m.headers[name] ?? m.headers[name.replaceAll("_", "-")];
}

/** `template` with every resolvable placeholder replaced. */
export function renderTemplate(template: string, m: NormalizedMessage, ctx: TransformContext): string {
  return template.replace(PLACEHOLDER, (whole, path: string) => resolve(path, m, ctx) ?? whole);
}

function validate(args: Readonly<Record<string, unknown>>, path: string): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  rejectUnknownArgs(args, ["set"], path, issues);
  const at = pointer(path, "set");
  const set = args.set;
  if (set === undefined) {
    issues.push({ path: at, message: 'required: an object of field → value, e.g. {"subject": "…"}' });
    return issues;
  }
  const keys = isPlainObject(set) ? Object.keys(set) : [];
  if (!isPlainObject(set) || keys.length === 0 || keys.length > ARG_LIMITS.maxListLength) {
    issues.push({
      path: at,
      message: `must be an object of 1 to ${ARG_LIMITS.maxListLength} field → value pairs`,
    });
    return issues;
  }
  for (const key of keys) {
    const keyAt = pointer(at, key);
    const bad = writableError(key);
    if (bad !== null) {
      issues.push({ path: keyAt, message: bad });
      continue;
    }
    const value = set[key];
    if (typeof value === "number" || typeof value === "boolean") {
      if (!Number.isFinite(value as number) && typeof value === "number")
        issues.push({ path: keyAt, message: "must be a finite number" });
      continue;
    }
    if (typeof value !== "string") {
      issues.push({
        path: keyAt,
        message: "must be a string (a literal or a template), a number or a boolean",
      });
      continue;
    }
    if (value.length > MAX_VALUE_LENGTH) {
      issues.push({ path: keyAt, message: `must be at most ${MAX_VALUE_LENGTH} characters` });
      continue;
    }
    for (const match of value.matchAll(PLACEHOLDER)) {
      const problem = templatePathError(match[1] as string);
      if (problem !== null) {
        issues.push({ path: keyAt, message: problem });
        break;
      }
    }
  }
  return issues;
}

function apply(
  message: NormalizedMessage,
  args: ReplaceValuesStepArgs,
  ctx: TransformContext,
): NormalizedMessage {
  const next = { ...message };
  let headers: Record<string, string> | null = null;
  let multi: Record<string, string[]> | null = null;
  for (const [key, raw] of Object.entries(args.set)) {
    const value = typeof raw === "string" ? renderTemplate(raw, message, ctx) : String(raw);
    if (key === "subject" || key === "text" || key === "html") {
      next[key] = value;
      continue;
    }
    const name = key.slice("headers.".length).toLowerCase();
    headers ??= { ...message.headers };
    multi ??= { ...message.headers_multi };
    headers[name] = value;
    delete multi[name];
  }
  if (headers !== null && multi !== null) {
    next.headers = headers;
    next.headers_multi = multi;
  }
  return next;
}

/** The `replace_values` step. */
export const replaceValuesStep = {
  name: "replace_values",
  kind: "transform",
  summary: "Sets the subject, a body or headers to literals or {{ path }} templates.",
  args: ReplaceValuesArgs,
  validate,
  apply,
} as const satisfies TransformStep<typeof ReplaceValuesArgs>;
