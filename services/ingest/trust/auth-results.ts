/**
 * The verdict of mail that did not come in over our own SMTP (HTTP upload, mailbox polling), taken
 * from an `Authentication-Results` field (RFC 8601) that a server the operator trusts added
 * (`TRUSTED_AUTHSERV_IDS`). The rule, and why (docs/security.md, "Authentication-Results of other
 * servers"):
 *
 * 1. Only the trace section counts: the fields above the message's first originator or content field
 *    (From, To, Subject, Date, Message-ID, MIME-Version, Content-*, …). Receiving servers prepend
 *    trace fields (RFC 5321 §4.4, RFC 8601 §5: "above any other trace header fields"); a field below
 *    the originator's own was written by the author, whatever it claims.
 * 2. In it, the topmost field whose authserv-id is trusted is the verdict. A trusted border server
 *    removes incoming fields that claim its own id (RFC 8601 §5); if it did not, its own field is
 *    still above any forged one, since everything that came in is below what it adds.
 * 3. An `Authentication-Results` field of an untrusted authserv-id above it is an untrusted hop: a
 *    receiving server we do not trust handled the message after the trusted one (it evaluated and
 *    stamped it, RFC 8601 §5), and could have written anything below its own fields (§7.1). Then no
 *    verdict is taken.
 *
 * Nothing found → `source: "none"`. Fields are split by mailauth's header splitter and parsed by its
 * RFC 8601 parser (comments, quoted strings, several `dkim` results).
 */
import headerParser, { type ParsedAuthResults, type ParsedResinfo } from "mailauth/lib/parse-dkim-headers";
import { getAlignment, parseHeaders } from "mailauth/lib/tools";
import { type MapperAuth, noAuth } from "../../../mapper/types.ts";
import { authResult, dmarcPolicy, domainOf } from "./results.ts";

/** Fields that only an originator writes (RFC 5322 §3.6, RFC 2045 §3): the end of the trace section. */
const ORIGINATOR_FIELDS = new Set([
  "from",
  "sender",
  "reply-to",
  "to",
  "cc",
  "bcc",
  "subject",
  "date",
  "message-id",
  "in-reply-to",
  "references",
  "comments",
  "keywords",
  "mime-version",
  "content-type",
  "content-transfer-encoding",
  "content-disposition",
]);

/** The header section of a raw message (up to the first empty line), as mailauth's splitter wants it. */
export function headerSection(raw: Uint8Array): Buffer {
  const buf = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  const crlf = buf.indexOf("\r\n\r\n");
  const lf = buf.indexOf("\n\n");
  const ends = [crlf >= 0 ? crlf + 2 : -1, lf >= 0 ? lf + 1 : -1].filter((i) => i >= 0);
  return ends.length > 0 ? buf.subarray(0, Math.min(...ends)) : buf;
}

/** The authserv-id of a parsed field: its first word (a version may follow, RFC 8601 §2.2), lowercased. */
function authservIdOf(parsed: ParsedAuthResults): string {
  return (parsed.value ?? "").trim().split(/\s+/)[0]?.replace(/^"|"$/g, "").toLowerCase() ?? "";
}

/**
 * The verdict of the trusted `Authentication-Results` field of a message's header section, or
 * {@link noAuth} when there is none (or it is below an untrusted hop).
 */
export function trustedHeaderAuth(header: Buffer, trustedIds: readonly string[]): MapperAuth {
  if (trustedIds.length === 0) return noAuth();
  const trusted = new Set(trustedIds.map((id) => id.toLowerCase()));
  let fields: ReturnType<typeof parseHeaders>["parsed"];
  try {
    fields = parseHeaders(header).parsed;
  } catch {
    return noAuth();
  }
  for (const field of fields) {
    if (ORIGINATOR_FIELDS.has(field.key)) break;
    if (field.key !== "authentication-results") continue;
    let parsed: ParsedAuthResults;
    try {
      parsed = headerParser(field.line.toString("utf8")).parsed;
    } catch {
      // An unreadable field names no id we could trust or distrust; keep looking.
      continue;
    }
    const id = authservIdOf(parsed);
    if (!trusted.has(id)) return noAuth();
    return verdictOf(parsed, fromDomainOf(fields));
  }
  return noAuth();
}

/** The domain of the message's (first) From address, for DKIM alignment when the field names none. */
function fromDomainOf(fields: ReturnType<typeof parseHeaders>["parsed"]): string | null {
  const from = fields.find((f) => f.key === "from");
  if (!from) return null;
  const value = from.line.toString("utf8").replace(/^[^:]*:/, "");
  const m = /<([^<>]*@[^<>]*)>/.exec(value) ?? /([^\s<>,;"]+@[^\s<>,;"]+)/.exec(value);
  return m ? domainOf(m[1]) : null;
}

function prop(r: ParsedResinfo | undefined, ptype: string, name: string): string | null {
  const group = r?.[ptype];
  if (group && typeof group === "object") {
    const v = group[name];
    return typeof v === "string" && v !== "" ? v : null;
  }
  return null;
}

function single(parsed: ParsedAuthResults, method: string): ParsedResinfo | undefined {
  const r = parsed[method];
  if (Array.isArray(r)) return r[0];
  return r && typeof r === "object" ? r : undefined;
}

function verdictOf(parsed: ParsedAuthResults, messageFromDomain: string | null): MapperAuth {
  const spf = single(parsed, "spf");
  const dmarc = single(parsed, "dmarc");
  const arc = single(parsed, "arc");
  const fromDomain = domainOf(prop(dmarc, "header", "from")) ?? messageFromDomain;
  // The policy: `policy.dmarc` when given, else the `p=` most verifiers put in the comment.
  const policyWord =
    prop(dmarc, "policy", "dmarc") ?? /(?:^|\s)p=([a-z]+)/i.exec(dmarc?.comment ?? "")?.[1] ?? null;
  const dkim = (parsed.dkim ?? []).map((r) => {
    const domain = domainOf(prop(r, "header", "d") ?? prop(r, "header", "i")) ?? "";
    const result = authResult(r.value);
    const aligned =
      result === "pass" && domain !== "" && fromDomain !== null && isAligned(fromDomain, domain);
    return { result, domain, selector: prop(r, "header", "s"), aligned };
  });
  return {
    source: "trusted_header",
    spf: {
      result: authResult(spf?.value),
      domain: domainOf(prop(spf, "smtp", "mailfrom")) ?? domainOf(prop(spf, "smtp", "helo")),
    },
    dkim,
    dmarc: { result: authResult(dmarc?.value), policy: dmarcPolicy(policyWord), domain: fromDomain },
    arc: { result: authResult(arc?.value) },
  };
}

/** Relaxed DKIM alignment (RFC 7489 §3.1.1): the signing domain and the From domain share an Organizational Domain. */
function isAligned(fromDomain: string, signingDomain: string): boolean {
  try {
    return getAlignment(fromDomain, [signingDomain], false) !== false;
  } catch {
    return false;
  }
}
