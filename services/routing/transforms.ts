/**
 * Transform steps that run before the final `map.*` step (spec "Pipeline" table). Each returns a new
 * message; the input is never mutated, so one stored message can feed several routes.
 */
import { regexTest } from "../../mapper/regex.ts";
import type { AttachmentDescriptor, NormalizedMessage } from "../lib/message.ts";
import { bareMimeType, globMatch } from "./glob.ts";
import type { PipelineStep } from "./pipeline.ts";

/** `remove_fields` paths other than `headers.<name>`, and what removing each does. */
const FIELD_REMOVERS: Record<string, (m: NormalizedMessage) => void> = {
  subject: (m) => {
    m.subject = "";
  },
  date: (m) => {
    m.date = null;
  },
  text: (m) => {
    m.text = "";
  },
  html: (m) => {
    m.html = "";
  },
  from: (m) => {
    m.from = [];
  },
  to: (m) => {
    m.to = [];
  },
  cc: (m) => {
    m.cc = [];
  },
  reply_to: (m) => {
    m.reply_to = [];
  },
  headers: (m) => {
    m.headers = {};
    m.headers_multi = {};
  },
  // An empty list, not a missing key: generic@1 always carries `body.attachments` (spec, Events).
  attachments: (m) => {
    m.attachments = [];
  },
  "attachments[*].filename": (m) => {
    m.attachments = m.attachments.map((a) => ({ ...a, filename: "" }));
  },
  "attachments[*].content_id": (m) => {
    m.attachments = m.attachments.map(({ content_id: _, ...a }) => a);
  },
  "attachments[*].sha256": (m) => {
    m.attachments = m.attachments.map(({ sha256: _, ...a }) => a);
  },
};

/** Every path `remove_fields` accepts, for error messages and docs; `headers.<name>` is a pattern. */
export const REMOVABLE_FIELD_PATHS: readonly string[] = [...Object.keys(FIELD_REMOVERS), "headers.<name>"];

const HEADER_PREFIX = "headers.";

/** Null when `path` is a removable field, else the reason. */
export function removableFieldError(path: string): string | null {
  if (path in FIELD_REMOVERS) return null;
  if (path.startsWith(HEADER_PREFIX) && /^[!-9;-~]+$/.test(path.slice(HEADER_PREFIX.length))) return null;
  return `cannot remove "${path}"; removable paths: ${REMOVABLE_FIELD_PATHS.join(", ")}`;
}

function removeField(m: NormalizedMessage, path: string): void {
  const remover = FIELD_REMOVERS[path];
  if (remover !== undefined) {
    remover(m);
    return;
  }
  if (!path.startsWith(HEADER_PREFIX)) throw new Error(`remove_fields: unsupported path ${path}`);
  const name = path.slice(HEADER_PREFIX.length).toLowerCase();
  const { [name]: _h, ...headers } = m.headers;
  const { [name]: _hm, ...multi } = m.headers_multi;
  m.headers = headers;
  m.headers_multi = multi;
}

/** `strip_attachments_if` args. Every condition given must hold for an attachment to be stripped. */
export interface StripConditions {
  /** MIME globs (`image/*`); any may match */
  mime_in?: string[];
  /** filename globs (`*.png`), case-insensitive; any may match */
  filename_glob?: string[];
  /** RE2 pattern searched in the filename, case-insensitive */
  filename_regex?: string;
  /** size >= this many bytes */
  min_size_bytes?: number;
  /** size <= this many bytes */
  max_size_bytes?: number;
  /** the MIME part was (true) or was not (false) marked inline */
  is_inline?: boolean;
}

/** The argument names `strip_attachments_if` accepts. */
export const STRIP_CONDITION_KEYS = [
  "mime_in",
  "filename_glob",
  "filename_regex",
  "min_size_bytes",
  "max_size_bytes",
  "is_inline",
] as const;

/** True when `a` meets every condition given in `c`. */
export function attachmentMatches(a: AttachmentDescriptor, c: StripConditions): boolean {
  if (c.mime_in !== undefined) {
    const mime = bareMimeType(a.content_type);
    if (!c.mime_in.some((g) => globMatch(g.trim(), mime))) return false;
  }
  if (c.filename_glob !== undefined && !c.filename_glob.some((g) => globMatch(g, a.filename))) return false;
  if (c.filename_regex !== undefined && regexTest(`(?i)${c.filename_regex}`, a.filename) !== true)
    return false;
  if (c.min_size_bytes !== undefined && a.size < c.min_size_bytes) return false;
  if (c.max_size_bytes !== undefined && a.size > c.max_size_bytes) return false;
  if (c.is_inline !== undefined && a.is_inline !== c.is_inline) return false;
  return true;
}

/**
 * Runs the transform steps of a validated pipeline over `message`, in order, and returns the result.
 * `map.*` steps are skipped (the caller runs the final mapper); the input message is not modified.
 */
export function applyTransforms(
  steps: readonly PipelineStep[],
  message: NormalizedMessage,
): NormalizedMessage {
  let current = message;
  for (const step of steps) {
    if (step.name.startsWith("map.")) continue;
    const next: NormalizedMessage = { ...current };
    if (step.name === "remove_fields") {
      for (const path of (step.args as { paths: string[] }).paths) removeField(next, path);
    } else if (step.name === "strip_attachments_if") {
      const conditions = step.args as StripConditions;
      next.attachments = current.attachments.filter((a) => !attachmentMatches(a, conditions));
    } else {
      throw new Error(`unknown pipeline step ${step.name}`);
    }
    current = next;
  }
  return current;
}
