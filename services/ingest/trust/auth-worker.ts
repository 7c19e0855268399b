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
import { verifySmtp } from "./smtp-verify.ts";

const port = parentPort;
if (!port) throw new Error("auth-worker.ts runs as a worker thread (auth-thread.ts)");

const lookups = new Map<number, { resolve: (answer: unknown) => void; reject: (err: Error) => void }>();
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

async function verify(m: Extract<AuthThreadRequest, { t: "verify" }>): Promise<void> {
  const resolve = (name: string, rrtype = "A") =>
    new Promise<unknown>((ok, fail) => {
      const lookup = ++nextLookup;
      lookups.set(lookup, { resolve: ok, reject: fail });
      send({ t: "dns", id: m.id, lookup, name, rrtype });
    });
  let input: Buffer | ReadStream;
  if (m.raw) input = Buffer.from(m.raw.buffer, m.raw.byteOffset, m.raw.byteLength);
  else {
    input = createReadStream(m.path ?? "");
    streams.set(m.id, input);
  }
  try {
    const auth = await verifySmtp(input, m.facts, { resolve, mta: m.mta, spfDeadlineMs: m.spfDeadlineMs });
    send({ t: "done", id: m.id, auth });
  } catch {
    send({ t: "failed", id: m.id });
  } finally {
    streams.delete(m.id);
  }
}

send({ t: "ready" });
