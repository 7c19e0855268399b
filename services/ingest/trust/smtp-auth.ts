/**
 * SPF, DKIM, DMARC and ARC of a message received over our SMTP, computed with mailauth (smtp-verify.ts,
 * on the authentication thread of auth-thread.ts) from the connecting address, the HELO name and MAIL
 * FROM (RFC 7208, 6376, 7489, 8617), with every DNS lookup through the service's resolver (lib/dns.ts).
 * Mapped to `message.auth`:
 *
 * - results are RFC 8601's lowercase words (results.ts); a DKIM body-hash mismatch reads `neutral`,
 *   as mailauth's lenient mode reports it;
 * - a DKIM signature's `aligned` is DMARC's verdict on it (mailauth settles it from the DMARC record's
 *   alignment mode once the record is known); only a passing signature is ever aligned;
 * - DMARC's `policy` is the record's effective policy for the From domain (`p`, or `sp`/`np` when
 *   inherited), null without a record; `domain` is the From domain.
 *
 * Bounded: the whole evaluation has {@link AUTH_DEADLINE_MS}. A lookup that fails or times out is a
 * `temperror` of its check (mailauth). An evaluation that runs out of time, or fails, reports SPF,
 * DMARC and ARC `temperror` and no DKIM signature (mailauth gives no partial result). It never throws:
 * a message is never refused or lost for it.
 */

import { createReadStream } from "node:fs";
import type { MapperAuth } from "../../../mapper/types.ts";
import type { DnsResolver } from "../../lib/dns.ts";
import { metrics } from "../../lib/metrics.ts";
import { type AuthTask, authThread } from "./auth-thread.ts";
import {
  fromMailauth,
  type SmtpClientFacts,
  type VerdictMemos,
  verdictMemos,
  verifySmtp,
} from "./smtp-verify.ts";

export { fromMailauth, type SmtpClientFacts };

/** How long the whole authentication of one message may take before it is reported `temperror`. */
export const AUTH_DEADLINE_MS = 4000;

/** A message to authenticate: its bytes, or the spool file holding it. */
export type AuthInput = Uint8Array | { path: string };

/**
 * The verdict of one message, evaluated on the authentication thread (auth-thread.ts), or on this one
 * with `inProcess`, while the thread starts, or when it cannot be started. `mta` is our authserv-id (INBOUND_DOMAIN).
 * `deadlineMs` defaults to {@link AUTH_DEADLINE_MS}.
 */
export async function authenticateSmtp(
  input: AuthInput,
  facts: SmtpClientFacts,
  opts: { resolver: DnsResolver; mta: string; deadlineMs?: number; inProcess?: boolean },
): Promise<MapperAuth> {
  const deadlineMs = opts.deadlineMs ?? AUTH_DEADLINE_MS;
  const verifyOpts = {
    resolve: opts.resolver.resolve,
    expiry: (name: string, rrtype: string) => opts.resolver.expiryOf(name, rrtype),
    memos: memosOf(opts.resolver),
    mta: opts.mta,
    // SPF's own bound, inside the overall one, so that its DNS work stops too.
    spfDeadlineMs: Math.max(1, deadlineMs - 250),
  };
  const task = (!opts.inProcess && onThread(input, facts, verifyOpts)) || inProcess(input, facts, verifyOpts);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), deadlineMs);
  });
  const outcome = await Promise.race([task.verdict.then((r) => r ?? ("failed" as const)), timeout]);
  clearTimeout(timer);
  if (outcome === "timeout") task.cancel();
  if (outcome === "timeout" || outcome === "failed") {
    metrics.authDegraded.inc({ reason: outcome });
    return undecided();
  }
  return outcome;
}

type VerifyOpts = Parameters<typeof verifySmtp>[2];

/** The SPF and DMARC verdicts kept against each resolver's cache (one resolver per process but in tests). */
const memosByResolver = new WeakMap<DnsResolver, VerdictMemos>();

function memosOf(resolver: DnsResolver): VerdictMemos {
  let memos = memosByResolver.get(resolver);
  if (!memos) {
    memos = verdictMemos();
    memosByResolver.set(resolver, memos);
  }
  return memos;
}

function onThread(
  input: AuthInput,
  facts: SmtpClientFacts,
  opts: VerifyOpts & { expiry: NonNullable<VerifyOpts["expiry"]> },
): AuthTask | null {
  try {
    return authThread().submit(input instanceof Uint8Array ? { raw: input } : input, facts, opts);
  } catch {
    return null;
  }
}

function inProcess(input: AuthInput, facts: SmtpClientFacts, opts: VerifyOpts): AuthTask {
  const stream = input instanceof Uint8Array ? null : createReadStream(input.path);
  const bytes =
    input instanceof Uint8Array ? Buffer.from(input.buffer, input.byteOffset, input.byteLength) : null;
  return {
    verdict: together(() => verifySmtp(bytes ?? (stream as NonNullable<typeof stream>), facts, opts)).catch(
      () => null,
    ),
    // A spool file's stream still being read is closed now, not when mailauth would get to its end.
    cancel: () => stream?.destroy(),
  };
}

let startingTogether: (() => void)[] = [];

/**
 * Runs `verify` with the other verifications asked for during this turn of the event loop: they all
 * start in its check phase (`setImmediate`), one after the other, before any other I/O is handled.
 * With a warm DNS cache a verification runs to its end in that one go (its lookups answer at once), so
 * the verifier's code and data stay in the CPU's caches from one message to the next instead of being
 * pushed out by the intake's other work between messages. Measured on the SMTP intake bench (8
 * connections, about 2.3 messages per turn): the first verification of a turn cost about 0.38 ms of
 * CPU and each next one about 0.2 ms, so authentication's cost per message fell by about a fifth.
 * What it adds to a message's wait is the rest of the turn.
 */
function together<T>(verify: () => Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    startingTogether.push(() => {
      try {
        verify().then(resolve, reject);
      } catch (err) {
        reject(err); // the others of the turn still start
      }
    });
    if (startingTogether.length > 1) return;
    setImmediate(() => {
      const batch = startingTogether;
      startingTogether = [];
      for (const start of batch) start();
    });
  });
}

/** A header field folded over more continuation lines than this is not evaluated (see below). */
export const MAX_FOLDED_LINES = 500;

/**
 * Why a header section is not given to mailauth, or null when it may be. mailauth's header parsing is
 * quadratic in bare CRs (a CR not followed by LF) and in the continuation lines of one field: 40,000
 * folds took 4.5 s and a 267,000-CR run 95 s of the event loop, which no timer can interrupt. Such a
 * header section is malformed (RFC 5322 §2.2, §2.1.1) and cannot carry a signature anyone verifies, so
 * it is not evaluated at all. `complete` says whether `header` ends where the section ends (it was read
 * whole within the service's header limit).
 */
export function unauthenticable(header: Uint8Array, complete: boolean): string | null {
  if (!complete) return "header section too large";
  let folded = 0;
  for (let i = 0; i < header.length; i++) {
    const c = header[i];
    if (c === 13 && header[i + 1] !== 10) return "bare CR in the header section";
    if (c === 10) {
      const next = header[i + 1];
      folded = next === 32 || next === 9 ? folded + 1 : 0;
      if (folded > MAX_FOLDED_LINES) return "a header field folded over too many lines";
    }
  }
  return null;
}

/** The verdict of a message whose header section is not evaluated: every result `permerror`. */
export function unevaluated(): MapperAuth {
  metrics.authDegraded.inc({ reason: "malformed" });
  return {
    source: "smtp",
    spf: { result: "permerror", domain: null },
    dkim: [],
    dmarc: { result: "permerror", policy: null, domain: null },
    arc: { result: "permerror" },
  };
}

/** What is reported when the evaluation did not finish: nothing decided, everything `temperror`. */
function undecided(): MapperAuth {
  return {
    source: "smtp",
    spf: { result: "temperror", domain: null },
    dkim: [],
    dmarc: { result: "temperror", policy: null, domain: null },
    arc: { result: "temperror" },
  };
}
