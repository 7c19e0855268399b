/**
 * Result words as `message.auth` publishes them: RFC 8601's lowercase words (§2.7), whatever a verifier
 * or a header spelled. Shared by the SMTP verdict (mailauth) and the trusted-header verdict.
 */
import { AUTH_RESULTS, type AuthResult } from "../../../mapper/types.ts";

/** Words some verifiers use for one of ours. */
const SYNONYMS: Readonly<Record<string, AuthResult>> = {
  temperr: "temperror",
  permerr: "permerror",
  hardfail: "fail",
  // RFC 8601 §2.7.1: signed, but the signature is not acceptable to the verifier (a weak key, rsa-sha1).
  policy: "neutral",
  // mailauth's and BIMI's words for "not evaluated".
  skipped: "none",
  declined: "none",
};

/** The RFC 8601 word for `word`; anything unknown is `neutral` (a claim we cannot read is no claim). */
export function authResult(word: unknown): AuthResult {
  if (typeof word !== "string" || word.trim() === "") return "none";
  const w = word.trim().toLowerCase();
  if ((AUTH_RESULTS as readonly string[]).includes(w)) return w as AuthResult;
  return SYNONYMS[w] ?? "neutral";
}

/** A DMARC policy word, or null. */
export function dmarcPolicy(word: unknown): "none" | "quarantine" | "reject" | null {
  if (typeof word !== "string") return null;
  const w = word.trim().toLowerCase();
  return w === "none" || w === "quarantine" || w === "reject" ? w : null;
}

/** The domain of an address or `@domain` identity (`a@b.example` → `b.example`), lowercased; null if none. */
export function domainOf(identity: unknown): string | null {
  if (typeof identity !== "string") return null;
  const at = identity.lastIndexOf("@");
  const domain = (at >= 0 ? identity.slice(at + 1) : identity).trim().replace(/[<>]/g, "").toLowerCase();
  return domain === "" ? null : domain;
}
