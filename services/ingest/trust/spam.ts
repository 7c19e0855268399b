/**
 * The spam verdict of a message from rspamd (`RSPAMD_URL`): the raw message POSTed to `/checkv2` with
 * the envelope facts rspamd reads from request headers (`IP`, `Helo`, `From`, `Rcpt`, `Hostname`), once
 * per message. Its JSON answer becomes `message.spam` = `{score, action, symbols}` (symbol names,
 * sorted). A scanner that is down, slow (over {@link SPAM_TIMEOUT_MS}) or answers nonsense gives
 * `null`: the message is accepted all the same, and `mailhook_spam_check_failures_total` counts it.
 */
import type { MapperSpam } from "../../../mapper/types.ts";
import { metrics } from "../../lib/metrics.ts";

/** How long one scan may take before the message goes on without a verdict. */
export const SPAM_TIMEOUT_MS = 5000;

/** What rspamd is told about the message's delivery; every part is optional (HTTP uploads have none). */
export interface SpamFacts {
  ip?: string;
  helo?: string;
  mailFrom?: string;
  rcptTo?: readonly string[];
  /** our host name (INBOUND_DOMAIN) */
  hostname?: string;
}

/** The message body as fetch sends it: bytes or a spool file. */
export type SpamInput = Uint8Array | Blob;

/** rspamd's `/checkv2` answer, the parts used. */
interface CheckV2 {
  score?: unknown;
  action?: unknown;
  symbols?: unknown;
}

/** Scans one message; never throws. `timeoutMs` defaults to {@link SPAM_TIMEOUT_MS}. */
export async function scanForSpam(
  baseUrl: string,
  body: SpamInput,
  facts: SpamFacts,
  timeoutMs = SPAM_TIMEOUT_MS,
): Promise<MapperSpam | null> {
  const headers = new Headers({ "Content-Type": "message/rfc822" });
  if (facts.ip) headers.set("IP", facts.ip);
  if (facts.helo) headers.set("Helo", facts.helo);
  if (facts.mailFrom) headers.set("From", facts.mailFrom);
  for (const rcpt of facts.rcptTo ?? []) headers.append("Rcpt", rcpt);
  if (facts.hostname) headers.set("Hostname", facts.hostname);
  let res: Response;
  try {
    res = await fetch(`${baseUrl}/checkv2`, {
      method: "POST",
      headers,
      body: body as BodyInit,
      signal: AbortSignal.timeout(timeoutMs),
      redirect: "manual",
    });
  } catch (err) {
    const timedOut = err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError");
    metrics.spamCheckFailures.inc({ reason: timedOut ? "timeout" : "unavailable" });
    return null;
  }
  let parsed: CheckV2;
  try {
    if (!res.ok) throw new Error(`status ${res.status}`);
    parsed = (await res.json()) as CheckV2;
  } catch {
    metrics.spamCheckFailures.inc({ reason: "bad_response" });
    return null;
  }
  const verdict = spamOf(parsed);
  if (verdict === null) metrics.spamCheckFailures.inc({ reason: "bad_response" });
  return verdict;
}

/** `message.spam` of a `/checkv2` answer, or null when it has no score or action. */
export function spamOf(answer: CheckV2): MapperSpam | null {
  if (typeof answer.score !== "number" || !Number.isFinite(answer.score)) return null;
  if (typeof answer.action !== "string" || answer.action === "") return null;
  const symbols =
    answer.symbols && typeof answer.symbols === "object" ? Object.keys(answer.symbols as object).sort() : [];
  // Two decimals, as rspamd prints them: the float noise of a sum of symbol weights means nothing.
  return { score: Math.round(answer.score * 100) / 100, action: answer.action, symbols };
}
