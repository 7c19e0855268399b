/**
 * Compiles a validated route rule into a predicate over a normalised message (docs/routing.md).
 *
 * Matching semantics (documented for users in docs/routing.md):
 * - every populated key must hold (AND); lists are OR; `{}` matches every message;
 * - all comparisons ignore case; rule values are trimmed (regexes excepted);
 * - `to_*` look at To + Cc, plus the SMTP envelope recipients when an envelope is given;
 * - `from_*` look at the From header addresses;
 * - `from_domains` is an exact domain match (MailWebhook semantics): `example.com` does not match
 *   `mail.example.com`;
 * - header conditions read every value of a repeated header; a missing header never matches;
 * - `attachments_mime` fails when no attachment's type matches;
 * - the keys on what the service understands read it with defaults for a message stored before it was
 *   computed (lib/understanding.ts); `spam_score_*` never hold when the message has no spam verdict.
 */
import { regexTest } from "../../mapper/regex.ts";
import type { MessageUnderstanding } from "../../mapper/types.ts";
import type { Envelope, NormalizedMessage } from "../lib/message.ts";
import { understandingOf } from "../lib/understanding.ts";
import { bareMimeType, globMatch } from "./glob.ts";
import type { ValidationIssue } from "./issues.ts";
import { type Rule, type RuleValues, validateRule } from "./rule-validate.ts";

/** A compiled rule: cheap to call for many messages. */
export type RulePredicate = (message: NormalizedMessage, envelope?: Envelope) => boolean;

/** Thrown by `compileRule` for a rule that `validateRule` rejects. */
export class InvalidRuleError extends Error {
  override name = "InvalidRuleError";
  constructor(readonly details: ValidationIssue[]) {
    super(`invalid route rule: ${details.map((d) => `${d.path}: ${d.message}`).join("; ")}`);
  }
}

/** Lazily derived, lowercased views of one message, shared by all conditions of one evaluation. */
class MessageView {
  #subject?: string;
  #to?: string[];
  #from?: string[];
  #fromDomains?: string[];
  #mimes?: string[];
  #understanding?: MessageUnderstanding;
  constructor(
    readonly message: NormalizedMessage,
    readonly envelope: Envelope | undefined,
  ) {}
  get subject(): string {
    this.#subject ??= this.message.subject.toLowerCase();
    return this.#subject;
  }
  get to(): string[] {
    this.#to ??= [
      ...this.message.to.map((p) => p.email),
      ...this.message.cc.map((p) => p.email),
      ...(this.envelope?.rcpt_to ?? []),
    ].map((e) => e.trim().toLowerCase());
    return this.#to;
  }
  get from(): string[] {
    this.#from ??= this.message.from.map((p) => p.email.trim().toLowerCase());
    return this.#from;
  }
  get fromDomains(): string[] {
    this.#fromDomains ??= this.from.flatMap((e) => {
      const at = e.lastIndexOf("@");
      return at < 0 ? [] : [e.slice(at + 1).replace(/\.$/, "")];
    });
    return this.#fromDomains;
  }
  get mimeTypes(): string[] {
    this.#mimes ??= this.message.attachments.map((a) => bareMimeType(a.content_type));
    return this.#mimes;
  }
  get understanding(): MessageUnderstanding {
    this.#understanding ??= understandingOf(this.message);
    return this.#understanding;
  }
  /** Every value of header `name` (lowercase) plus, when repeated, the joined value; [] when absent. */
  header(name: string): string[] {
    const joined = this.message.headers[name];
    const multi = this.message.headers_multi[name];
    if (multi !== undefined) return [...multi, joined ?? multi.join(", ")];
    return joined === undefined ? [] : [joined];
  }
}

type ViewPredicate = (view: MessageView) => boolean;

const list = (v: RuleValues): string[] => (typeof v === "string" ? [v] : v);
const norm = (v: RuleValues): string[] => list(v).map((s) => s.trim().toLowerCase());

type Field = (view: MessageView) => string[];

function containsAny(field: Field, needles: string[]): ViewPredicate {
  return (view) => field(view).some((h) => needles.some((n) => h.includes(n)));
}

function oneOf(field: Field, wanted: string[]): ViewPredicate {
  const set = new Set(wanted);
  return (view) => field(view).some((v) => set.has(v));
}

function headerPredicate(
  conditions: Record<string, RuleValues>,
  test: (value: string, wanted: string) => boolean,
): ViewPredicate {
  const checks = Object.entries(conditions).map(([name, values]) => ({
    name: name.toLowerCase(),
    wanted: norm(values),
  }));
  return (view) =>
    checks.every(({ name, wanted }) => {
      const values = view.header(name).map((v) => v.trim().toLowerCase());
      return values.some((v) => wanted.some((w) => test(v, w)));
    });
}

function compileNode(rule: Rule): ViewPredicate {
  const parts: ViewPredicate[] = [];
  const r = rule;
  if (r.subject_contains !== undefined) parts.push(containsAny((v) => [v.subject], norm(r.subject_contains)));
  if (r.subject_regex !== undefined) {
    // RE2 through mapper/regex.ts (its cache owns the compiled programs); (?i) makes it case-insensitive.
    const patterns = list(r.subject_regex).map((p) => `(?i)${p}`);
    parts.push((view) => patterns.some((p) => regexTest(p, view.message.subject) === true));
  }
  if (r.to_contains !== undefined) parts.push(containsAny((v) => v.to, norm(r.to_contains)));
  if (r.to_emails !== undefined) parts.push(oneOf((v) => v.to, norm(r.to_emails)));
  if (r.from_contains !== undefined) parts.push(containsAny((v) => v.from, norm(r.from_contains)));
  if (r.from_emails !== undefined) parts.push(oneOf((v) => v.from, norm(r.from_emails)));
  if (r.from_domains !== undefined) {
    parts.push(
      oneOf(
        (v) => v.fromDomains,
        norm(r.from_domains).map((d) => d.replace(/\.$/, "")),
      ),
    );
  }
  if (r.headers_equals !== undefined) parts.push(headerPredicate(r.headers_equals, (v, w) => v === w));
  if (r.headers_contains !== undefined)
    parts.push(headerPredicate(r.headers_contains, (v, w) => v.includes(w)));
  if (r.attachments_mime !== undefined) {
    const globs = norm(r.attachments_mime);
    parts.push((view) => view.mimeTypes.some((m) => globs.some((g) => globMatch(g, m))));
  }
  if (r.auto_kind_in !== undefined)
    parts.push(oneOf((v) => [v.understanding.auto.kind], norm(r.auto_kind_in)));
  if (r.spf_in !== undefined) parts.push(oneOf((v) => [v.understanding.auth.spf.result], norm(r.spf_in)));
  if (r.dmarc_in !== undefined)
    parts.push(oneOf((v) => [v.understanding.auth.dmarc.result], norm(r.dmarc_in)));
  if (r.dkim_pass_domains !== undefined) {
    const passing: Field = (v) =>
      v.understanding.auth.dkim
        .filter((d) => d.result === "pass")
        .map((d) => d.domain.trim().toLowerCase().replace(/\.$/, ""));
    parts.push(
      oneOf(
        passing,
        norm(r.dkim_pass_domains).map((d) => d.replace(/\.$/, "")),
      ),
    );
  }
  if (r.spam_score_gte !== undefined) {
    const min = r.spam_score_gte;
    parts.push((view) => {
      const spam = view.understanding.spam;
      return spam !== null && spam.score >= min;
    });
  }
  if (r.spam_score_lt !== undefined) {
    const max = r.spam_score_lt;
    parts.push((view) => {
      const spam = view.understanding.spam;
      return spam !== null && spam.score < max;
    });
  }
  if (r.has_forwarded !== undefined) {
    const wanted = r.has_forwarded;
    parts.push((view) => (view.understanding.forwarded !== null) === wanted);
  }
  if (r.all !== undefined) {
    const subs = r.all.map(compileNode);
    parts.push((view) => subs.every((s) => s(view)));
  }
  if (r.any !== undefined) {
    const subs = r.any.map(compileNode);
    parts.push((view) => subs.some((s) => s(view)));
  }
  if (r.none !== undefined) {
    const subs = r.none.map(compileNode);
    parts.push((view) => !subs.some((s) => s(view)));
  }
  if (r.negate !== undefined) {
    const sub = compileNode(r.negate);
    parts.push((view) => !sub(view));
  }
  return (view) => parts.every((p) => p(view));
}

/**
 * Validates and compiles `rule` once; the returned predicate evaluates one message (and, for SMTP
 * ingest, its envelope, whose recipients count for `to_*`). Throws `InvalidRuleError` for an invalid rule.
 */
export function compileRule(rule: unknown): RulePredicate {
  const issues = validateRule(rule);
  if (issues.length > 0) throw new InvalidRuleError(issues);
  const predicate = compileNode(rule as Rule);
  return (message, envelope) => predicate(new MessageView(message, envelope));
}

/** One-shot convenience: `compileRule(rule)(message, envelope)`. Prefer `compileRule` in loops. */
export function matchRule(rule: unknown, message: NormalizedMessage, envelope?: Envelope): boolean {
  return compileRule(rule)(message, envelope);
}
