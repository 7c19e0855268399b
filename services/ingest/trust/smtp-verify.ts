/**
 * The evaluation behind smtp-auth.ts: mailauth's SPF, DKIM, DMARC and ARC checks, driven with what
 * the service keeps of their results and nothing else.
 *
 * mailauth's `authenticate()` is the reference. For a message held in memory whose line breaks are
 * all CRLF (what SMTP delivers) the same checks run through mailauth's own parts, minus the work
 * whose output `message.auth` never reads: the message is not streamed through a Writable one
 * 64 KiB slice per event-loop turn and scanned byte by byte for the end of its header section (its
 * header section and body are handed to the DKIM verifier directly), Received fields are not parsed
 * (`trustReceived` is off), no Authentication-Results or Received-SPF text is formatted (mailauth is
 * patched for that: `formatResults: false` on its DKIM verifier, SPF and DMARC, which otherwise spend
 * about a sixth of the evaluation writing header texts nobody reads here), and BIMI is not looked up. SPF does not depend on DKIM, so the two run side by side (their DNS waits overlap on a
 * cold cache). Any other input (a stream, a body with bare LFs) goes through `authenticate()`.
 * test/unit/ingest/trust/smtp-verify.test.ts holds both to the same verdicts.
 */
import { isIP } from "node:net";
import type { Readable } from "node:stream";
import { type AuthenticateOptions, arc, authenticate, type MessageInput, spf } from "mailauth";
import { DkimVerifier } from "mailauth/lib/dkim/dkim-verifier";
import { evaluateDmarc } from "mailauth/lib/dmarc";
import { formatDomain } from "mailauth/lib/tools";
import type { MapperAuth } from "../../../mapper/types.ts";
import { authResult, dmarcPolicy, domainOf } from "./results.ts";

/** A DNS lookup with the shape of Node's `dns.promises.resolve` (lib/dns.ts's `resolve`). */
export type ResolveFn = (name: string, rrtype?: string) => Promise<unknown>;

/** The SMTP facts authentication starts from. */
export interface SmtpClientFacts {
  /** the connecting address */
  ip: string;
  /** the HELO/EHLO name ("" when the client sent none) */
  helo: string;
  /** MAIL FROM ("" for the null reverse-path) */
  mailFrom: string;
}

/** The message as mailauth reads it: bytes, or a stream of a spool file. */
export type AuthInput = Buffer | Readable;

export interface VerifyOptions {
  resolve: ResolveFn;
  /**
   * Until when `resolve` keeps its answer to `name`/`rrtype` cached (ms since the epoch; 0 when it does
   * not). With it and `memos`, an SPF verdict is reused for the same client while every answer it was
   * computed from stays cached unchanged, and so is a DMARC verdict ({@link VerdictMemo}); without
   * them, both are evaluated for every message.
   */
  expiry?: (name: string, rrtype: string) => number;
  /** The verdicts kept for `resolve`'s cache ({@link verdictMemos}: one set per resolver). */
  memos?: VerdictMemos;
  /** our authserv-id */
  mta: string;
  /** SPF's own time bound, ms */
  spfDeadlineMs: number;
}

type Authenticated = Awaited<ReturnType<typeof authenticate>>;

/** The parts of mailauth's result that {@link fromMailauth} reads. */
export interface MailauthVerdict {
  dkim: { results?: Authenticated["dkim"]["results"] } | undefined;
  spf: Authenticated["spf"];
  dmarc: Authenticated["dmarc"];
  arc: Authenticated["arc"];
}

/** `message.auth` of a message; rejects when mailauth throws. */
export async function verifySmtp(
  input: AuthInput,
  facts: SmtpClientFacts,
  opts: VerifyOptions,
): Promise<MapperAuth> {
  const direct = Buffer.isBuffer(input) && !hasBareLf(input);
  return fromMailauth(
    direct ? await verifyDirect(input, facts, opts) : await viaAuthenticate(input, facts, opts),
  );
}

/** Through mailauth's `authenticate()`. */
export function viaAuthenticate(
  input: AuthInput,
  facts: SmtpClientFacts,
  opts: VerifyOptions,
): Promise<Authenticated> {
  const options: AuthenticateOptions & { maxElapsedTime: number } = {
    ip: facts.ip,
    mta: opts.mta,
    resolver: opts.resolve as AuthenticateOptions["resolver"],
    disableBimi: true,
    maxElapsedTime: opts.spfDeadlineMs,
  };
  // Without an ARC set there is no chain to verify: its result is `none` either way.
  if (Buffer.isBuffer(input) && !hasArcSet(input)) options.disableArc = true;
  if (facts.helo) options.helo = facts.helo;
  if (facts.mailFrom) options.sender = facts.mailFrom;
  return authenticate(input as MessageInput, options);
}

/** The same checks as {@link viaAuthenticate}, on a message in memory whose line breaks are CRLF. */
export async function verifyDirect(
  raw: Buffer,
  facts: SmtpClientFacts,
  opts: VerifyOptions,
): Promise<MailauthVerdict> {
  const resolver = opts.resolve;
  // As authenticate() does: the HELO name defaults to the address, an address is bracketed.
  let helo = facts.helo || facts.ip;
  if (helo && isIP(helo)) helo = `[${helo}]`;
  const [dkim, spfResult] = await Promise.all([
    verifyDkim(raw, { resolver, sender: facts.mailFrom || undefined, formatResults: false }),
    checkSpf(facts, helo, opts),
  ]);
  const arcResult =
    dkim.arc && hasArcSet(raw) ? await arc(dkim.arc, { resolver, ip: facts.ip } as never) : undefined;
  let dmarcResult: Authenticated["dmarc"] = false;
  {
    // Called with no From address too, as authenticate() does: DMARC then has no verdict (false).
    const { response, dkimAligned } = await checkDmarc(
      {
        headerFrom: dkim.headerFrom,
        fromFields: dkim.fromFields,
        spfDomains: spfResult?.status?.result === "pass" && spfResult.domain ? [spfResult.domain] : [],
        dkimDomains: dkim.results
          .filter((r) => r.status?.result === "pass")
          .map((r) => ({
            id: r.id,
            domain: r.signingDomain,
            aligned: r.status.aligned,
            underSized: r.status.underSized,
          })),
        arcResult,
      },
      opts,
    );
    dmarcResult = response || false;
    // DMARC's verdict on each passing signature's alignment (authenticate() settles it the same way
    // once the record is known); a failing signature's flag is never read (fromMailauth).
    if (dkimAligned && response) {
      for (const row of dkim.results) {
        if (row.status?.result === "pass") {
          row.status.aligned = dkimAligned.has(formatDomain(row.signingDomain ?? ""))
            ? row.signingDomain
            : false;
        }
      }
    }
  }
  return { dkim: { results: dkim.results }, spf: spfResult, dmarc: dmarcResult, arc: arcResult ?? false };
}

type SpfResult = Awaited<ReturnType<typeof spf>>;
type DmarcInput = Pick<
  Parameters<typeof evaluateDmarc>[0],
  "headerFrom" | "fromFields" | "spfDomains" | "dkimDomains" | "arcResult"
>;
type DmarcOutcome = Awaited<ReturnType<typeof evaluateDmarc>>;

/**
 * Verdicts that are a function of their inputs (the key) and of the DNS answers they read, kept with
 * those answers' names and until when the resolver keeps each one. While every answer is still cached
 * unchanged — the same expiry — the verdict is the same, so a sender's burst is evaluated once per
 * record TTL instead of once per message. A verdict from a lookup that failed or was not cached
 * (`temperror`, an uncached error) is not kept, nor one that may depend on the time (a TXT record
 * with SPF's `%{t}` macro). Bounded: beyond {@link VerdictMemo.MAX} keys the oldest are dropped. The verdicts handed out are shared: read, never modified.
 */
export class VerdictMemo<T> {
  static readonly MAX = 10_000;
  readonly #entries = new Map<string, { verdict: T; deps: [string, string, number][] }>();

  /** The verdict of `key`: kept, or evaluated through a resolver that notes what it looks up. */
  async run(
    key: string,
    opts: Pick<VerifyOptions, "resolve" | "expiry">,
    evaluate: (resolve: ResolveFn) => Promise<T>,
    keepable: (verdict: T) => boolean,
  ): Promise<T> {
    const { expiry } = opts;
    if (!expiry) return evaluate(opts.resolve);
    const entry = this.#entries.get(key);
    if (entry) {
      if (entry.deps.every(([name, rrtype, until]) => expiry(name, rrtype) === until)) return entry.verdict;
      this.#entries.delete(key);
    }
    const consulted: [string, string][] = [];
    let timed = false;
    const verdict = await evaluate(async (name, rrtype) => {
      consulted.push([name, rrtype ?? "A"]);
      const answer = await opts.resolve(name, rrtype);
      // SPF's %{t} macro expands to the current time: a verdict that could read it depends on more
      // than the answers.
      if (rrtype === "TXT" && /%\{t/i.test(JSON.stringify(answer))) timed = true;
      return answer;
    });
    if (!timed && keepable(verdict)) {
      const deps = consulted.map(([name, rrtype]): [string, string, number] => [
        name,
        rrtype,
        expiry(name, rrtype),
      ]);
      if (deps.every((d) => d[2] > 0)) {
        if (this.#entries.size >= VerdictMemo.MAX)
          this.#entries.delete(this.#entries.keys().next().value as string);
        this.#entries.set(key, { verdict, deps });
      }
    }
    return verdict;
  }
}

/**
 * The verdicts kept for one resolver's cache: they are valid only against the answers of the cache they
 * were computed from, so each resolver has its own set.
 */
export interface VerdictMemos {
  /** SPF's, by client: address, HELO name and MAIL FROM (RFC 7208 §4) */
  spf: VerdictMemo<SpfResult>;
  /**
   * DMARC's, by what DMARC reads of a message: its From addresses, the number of From fields, the domain
   * SPF passed for, and each passing DKIM signature's domain, alignment and whether it covers part of
   * the body (RFC 7489 §3.1, §6.6); a message with an ARC set is evaluated every time
   */
  dmarc: VerdictMemo<DmarcOutcome>;
}

/** An empty set of {@link VerdictMemos}. */
export function verdictMemos(): VerdictMemos {
  return { spf: new VerdictMemo(), dmarc: new VerdictMemo() };
}

/** SPF of the client, kept in `opts.memos`. */
function checkSpf(facts: SmtpClientFacts, helo: string, opts: VerifyOptions): Promise<SpfResult> {
  const evaluate = (resolver: ResolveFn) =>
    spf({
      ip: facts.ip,
      helo,
      sender: facts.mailFrom || undefined,
      mta: opts.mta,
      resolver,
      maxElapsedTime: opts.spfDeadlineMs,
      formatResults: false,
    } as Parameters<typeof spf>[0]);
  if (!opts.memos) return evaluate(opts.resolve);
  return opts.memos.spf.run(
    `${facts.ip}\n${helo}\n${facts.mailFrom}`,
    opts,
    evaluate,
    (result) => Boolean(result) && result.status?.result !== "temperror",
  );
}

/** DMARC of a message, kept in `opts.memos` (a signature's id is not part of the verdict). */
function checkDmarc(input: DmarcInput, opts: VerifyOptions): Promise<DmarcOutcome> {
  const evaluate = (resolver: ResolveFn) =>
    evaluateDmarc({ ...input, resolver, strict: false, formatResults: false } as Parameters<
      typeof evaluateDmarc
    >[0]);
  if (input.arcResult || !opts.memos) return evaluate(opts.resolve);
  const key = JSON.stringify([
    input.headerFrom,
    input.fromFields,
    input.spfDomains,
    (input.dkimDomains ?? []).map((d) => [d.domain, d.aligned, d.underSized]),
  ]);
  return opts.memos.dmarc.run(
    key,
    opts,
    evaluate,
    (r) => r.response === false || r.response.status?.result !== "temperror",
  );
}

/**
 * mailauth's DKIM verifier fed the header section (through the empty line that ends it) and the body
 * at once, as its stream would after splitting them; with no empty line the whole message is header.
 */
async function verifyDkim(
  raw: Buffer,
  options: { resolver: ResolveFn; sender: string | undefined; formatResults: false },
) {
  const verifier = new DkimVerifier(options);
  // The header section ends with the first empty line; a message starting with one has none.
  const blank = raw.indexOf("\r\n\r\n");
  const split = raw[0] === 13 && raw[1] === 10 ? 2 : blank < 0 ? -1 : blank + 4;
  if (split < 0) await verifier.emitHeaders(raw.length > 0 ? raw : undefined);
  else {
    await verifier.emitHeaders(raw.subarray(0, split));
    if (split < raw.length) await verifier.nextChunk(raw.subarray(split));
  }
  await verifier.finalChunk();
  return verifier;
}

/** Whether `raw` has an LF not preceded by a CR (which mailauth's stream rewrites to CRLF first). */
export function hasBareLf(raw: Buffer): boolean {
  for (let i = raw.indexOf(10); i !== -1; i = raw.indexOf(10, i + 1)) {
    if (i === 0 || raw[i - 1] !== 13) return true;
  }
  return false;
}

/** Whether the header section of `raw` has an ARC-Seal field (RFC 8617 §4.1.3). */
export function hasArcSet(raw: Buffer): boolean {
  const end = raw.indexOf("\r\n\r\n");
  const header = raw.subarray(0, end < 0 ? raw.length : end).toString("latin1");
  return /(^|\n)arc-seal[ \t]*:/i.test(header);
}

/** `message.auth` of mailauth's result. */
export function fromMailauth(r: MailauthVerdict): MapperAuth {
  const dkim = (r.dkim?.results ?? [])
    // A message without a signature has one result "none" with no domain: that is "no signatures".
    .filter((s) => Boolean(s.signingDomain))
    .map((s) => ({
      result: authResult(s.status?.result),
      domain: (s.signingDomain ?? "").toLowerCase(),
      selector: s.selector ?? null,
      // Only a passing signature can align (RFC 7489 §3.1.1); mailauth also marks failing ones whose
      // domain would have aligned.
      aligned: s.status?.result === "pass" && Boolean(s.status?.aligned),
    }));
  const dmarc = r.dmarc || null;
  return {
    source: "smtp",
    spf: {
      result: authResult(r.spf ? r.spf.status?.result : "none"),
      domain: r.spf ? (r.spf.domain ?? null) : null,
    },
    dkim,
    dmarc: dmarc
      ? {
          result: authResult(dmarc.status?.result),
          // No record → no policy (mailauth then reports policy "none" for the empty record).
          policy: dmarc.status?.result === "none" && !dmarc.rr ? null : dmarcPolicy(dmarc.policy),
          domain: domainOf(dmarc.status?.header?.from) ?? dmarc.domain ?? null,
        }
      : { result: "none", policy: null, domain: null },
    arc: { result: authResult(r.arc ? r.arc.status?.result : "none") },
  };
}
