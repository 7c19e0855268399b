/**
 * The sender-authentication thread (auth-thread.ts starts it): evaluates messages with smtp-verify.ts,
 * several at once, and asks the main thread for every DNS lookup, so that the service keeps its one
 * resolver and cache (lib/dns.ts).
 *
 * Messages in: `verify` (a message's bytes or its spool file's path, and the SMTP facts), `dns` (the
 * answer to a lookup, or its error's code and text), `cancel` (a message past its deadline: its spool
 * file stops being read), `ping`. Out: `done` with `message.auth`, `failed`, `dns` (a lookup to make),
 * `pong`, and `ready` once, when it takes messages.
 */
import { createReadStream, type ReadStream } from "node:fs";
import { parentPort } from "node:worker_threads";
import type { AuthThreadReply, AuthThreadRequest } from "./auth-thread.ts";
import { verdictMemos, verifySmtp } from "./smtp-verify.ts";

const port = parentPort;
if (!port) throw new Error("auth-worker.ts runs as a worker thread (auth-thread.ts)");

const lookups = new Map<
  number,
  { key: string; resolve: (answer: unknown) => void; reject: (err: Error) => void }
>();

type Kept = { until: number; answer?: unknown; error?: { code: string | undefined; message: string } };
/** Outcomes the main thread's resolver still keeps cached, until they expire there (auth-thread.ts). */
const answers = new Map<string, Kept>();
/** Answers kept at most (expired ones are dropped first, then the oldest). */
const MAX_ANSWERS = 1000;
const streams = new Map<number, ReadStream>();
let nextLookup = 0;

const send = (m: AuthThreadReply) => port.postMessage(m);

port.on("message", (m: AuthThreadRequest) => {
  switch (m.t) {
    case "verify":
      void verify(m);
      break;
    case "dns": {
      const waiting = lookups.get(m.lookup);
      if (!waiting) break;
      lookups.delete(m.lookup);
      if (m.until > Date.now()) keep(waiting.key, m);
      if (m.error) waiting.reject(Object.assign(new Error(m.error.message), { code: m.error.code }));
      else waiting.resolve(m.answer);
      break;
    }
    case "cancel":
      streams.get(m.id)?.destroy();
      streams.delete(m.id);
      break;
    case "ping":
      send({ t: "pong" });
      break;
  }
});

const keyOf = (name: string, rrtype: string) =>
  `${rrtype.toUpperCase()} ${name.replace(/\.$/, "").toLowerCase()}`;

/** The SPF and DMARC verdicts kept against the answers kept here (smtp-verify.ts). */
const memos = verdictMemos();

/** Until when the answer kept here stays valid (the main thread's expiry of it); 0 when none is. */
function expiry(name: string, rrtype: string): number {
  const hit = answers.get(keyOf(name, rrtype));
  return hit && hit.until > Date.now() ? hit.until : 0;
}

async function verify(m: Extract<AuthThreadRequest, { t: "verify" }>): Promise<void> {
  const resolve = (name: string, rrtype = "A") => {
    const key = keyOf(name, rrtype);
    const hit = answers.get(key);
    if (hit && hit.until > Date.now()) {
      if (hit.error)
        return Promise.reject(Object.assign(new Error(hit.error.message), { code: hit.error.code }));
      // Callers may sort or splice what they get; the kept answer stays as it was.
      return Promise.resolve(structuredClone(hit.answer));
    }
    return new Promise<unknown>((ok, fail) => {
      const lookup = ++nextLookup;
      lookups.set(lookup, { key, resolve: ok, reject: fail });
      send({ t: "dns", id: m.id, lookup, name, rrtype });
    });
  };
  let input: Buffer | ReadStream;
  if (m.raw) input = Buffer.from(m.raw.buffer, m.raw.byteOffset, m.raw.byteLength);
  else {
    input = createReadStream(m.path ?? "");
    streams.set(m.id, input);
  }
  try {
    const auth = await verifySmtp(input, m.facts, {
      resolve,
      expiry,
      memos,
      mta: m.mta,
      spfDeadlineMs: m.spfDeadlineMs,
    });
    send({ t: "done", id: m.id, auth });
  } catch {
    send({ t: "failed", id: m.id });
  } finally {
    streams.delete(m.id);
  }
}

/** Keeps an outcome the main thread's resolver has cached, for as long as it keeps it. */
function keep(key: string, m: Kept): void {
  if (answers.size >= MAX_ANSWERS) {
    const now = Date.now();
    for (const [k, v] of answers) if (v.until <= now) answers.delete(k);
    if (answers.size >= MAX_ANSWERS) answers.delete(answers.keys().next().value as string);
  }
  answers.set(key, m.error ? { until: m.until, error: m.error } : { until: m.until, answer: m.answer });
}

send({ t: "ready" });
