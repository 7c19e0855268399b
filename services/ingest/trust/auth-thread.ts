/**
 * Sender authentication off the main thread (`SENDER_AUTH_THREAD=true`; off by default: the thread
 * costs more CPU in all, which a host without a spare core pays for). One worker thread per process
 * (auth-worker.ts) evaluates SPF, DKIM, DMARC and ARC for every message taken in over SMTP, so that the event loop taking in mail
 * spends on a message only the copy of its bytes there and the answers to its DNS lookups. DKIM's
 * canonicalisation and hashing, the RSA verification and the header parsing (together most of the
 * intake's CPU for a small message) run beside it.
 *
 * The thread asks back for each DNS lookup, which the main thread makes through the message's
 * resolver (lib/dns.ts): one cache and one set of servers for the whole service, whatever thread
 * evaluates. Each answer comes back with how long the resolver keeps it cached (`until`), and the
 * thread reuses its copy until then: with a warm cache a message costs one message each way, not
 * two more per lookup. The thread takes any number of messages at once; a lookup waiting on a cold
 * cache holds up only its own message.
 *
 * Until the thread has started (it loads its own copy of the modules: seconds on a busy machine), and
 * while a replacement starts, {@link AuthThread.submit} returns null and the caller evaluates on its
 * own thread. A message the thread does not answer is the caller's to bound (smtp-auth.ts, its deadline).
 * A thread that stops answering altogether (a ping after a missed deadline gets no pong within
 * {@link STUCK_MS}) or that exits is replaced; the messages it held fail (`temperror` for the caller).
 * Started at the first message; it does not keep the process alive.
 */
import { Worker } from "node:worker_threads";
import type { MapperAuth } from "../../../mapper/types.ts";
import { DnsError } from "../../lib/dns.ts";
import type { SmtpClientFacts } from "./smtp-verify.ts";

/** How long a thread suspected of being stuck gets to answer a ping before it is replaced. */
export const STUCK_MS = 1000;

export type AuthThreadRequest =
  | {
      t: "verify";
      id: number;
      /** the message, or (when it is not in memory) its spool file */
      raw?: Uint8Array;
      path?: string;
      facts: SmtpClientFacts;
      mta: string;
      spfDeadlineMs: number;
    }
  | {
      t: "dns";
      lookup: number;
      answer?: unknown;
      error?: { code: string | undefined; message: string };
      /** until when (ms since the epoch) the resolver keeps this outcome cached; 0: not cached */
      until: number;
    }
  | { t: "cancel"; id: number }
  | { t: "ping" };

export type AuthThreadReply =
  | { t: "done"; id: number; auth: MapperAuth }
  | { t: "failed"; id: number }
  | { t: "dns"; id: number; lookup: number; name: string; rrtype: string }
  | { t: "pong" }
  | { t: "ready" };

type Resolve = (name: string, rrtype?: string) => Promise<unknown>;

/** Until when the resolver keeps an answer cached (`DnsResolver.expiryOf`); 0 when it does not. */
type Expiry = (name: string, rrtype: string) => number;

interface Job {
  resolve: Resolve;
  expiry: Expiry | undefined;
  settle: (auth: MapperAuth | null) => void;
}

/** One evaluation: `verdict` settles with `message.auth`, or null when the thread failed it. */
export interface AuthTask {
  verdict: Promise<MapperAuth | null>;
  /** the caller gave up on it (its deadline): a spool file stops being read, the thread is checked */
  cancel(): void;
}

class AuthThread {
  #worker: Worker | null = null;
  /** the worker has loaded its modules (seconds on a busy machine) and takes messages */
  #ready = false;
  #onReady: (() => void)[] = [];
  #jobs = new Map<number, Job>();
  #nextId = 0;
  #pingTimer: ReturnType<typeof setTimeout> | null = null;

  /** Starts the thread if it is not running; resolves once it takes messages. */
  started(): Promise<void> {
    this.#started();
    if (this.#ready) return Promise.resolve();
    return new Promise((resolve) => this.#onReady.push(resolve));
  }

  /** Hands a message to the thread (starting it at the first call); null while it is not ready. */
  submit(
    input: { raw: Uint8Array } | { path: string },
    facts: SmtpClientFacts,
    opts: { resolve: Resolve; expiry?: Expiry; mta: string; spfDeadlineMs: number },
  ): AuthTask | null {
    const worker = this.#started();
    if (!this.#ready) return null;
    const id = ++this.#nextId;
    const verdict = new Promise<MapperAuth | null>((settle) => {
      this.#jobs.set(id, { resolve: opts.resolve, expiry: opts.expiry, settle });
    });
    const { mta, spfDeadlineMs } = opts;
    // The bytes are copied once, into a buffer of their own that is moved to the thread (a view's whole
    // underlying buffer would be cloned otherwise).
    const raw = "raw" in input ? new Uint8Array(input.raw) : undefined;
    const request: AuthThreadRequest = raw
      ? { t: "verify", id, raw, facts, mta, spfDeadlineMs }
      : { t: "verify", id, path: (input as { path: string }).path, facts, mta, spfDeadlineMs };
    worker.postMessage(request, raw ? [raw.buffer] : []);
    return {
      verdict,
      cancel: () => {
        if (!this.#jobs.delete(id) || this.#worker !== worker) return;
        worker.postMessage({ t: "cancel", id } satisfies AuthThreadRequest);
        this.#checkAlive(worker);
      },
    };
  }

  #started(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(new URL("./auth-worker.ts", import.meta.url));
    worker.unref();
    worker.on("message", (m: AuthThreadReply) => this.#onMessage(worker, m));
    worker.on("error", () => this.#replace(worker));
    worker.on("exit", () => this.#replace(worker));
    this.#worker = worker;
    this.#ready = false;
    return worker;
  }

  #onMessage(worker: Worker, m: AuthThreadReply): void {
    switch (m.t) {
      case "done":
      case "failed": {
        const job = this.#jobs.get(m.id);
        this.#jobs.delete(m.id);
        job?.settle(m.t === "done" ? m.auth : null);
        break;
      }
      case "dns": {
        const job = this.#jobs.get(m.id);
        const reply = (r: Omit<Extract<AuthThreadRequest, { t: "dns" }>, "t" | "lookup" | "until">) => {
          if (this.#worker !== worker) return;
          let until = 0;
          try {
            until = job?.expiry?.(m.name, m.rrtype) ?? 0;
          } catch {
            // not kept: the thread asks again next time
          }
          worker.postMessage({ t: "dns", lookup: m.lookup, until, ...r });
        };
        if (!job) {
          reply({ error: { code: "ECANCELLED", message: "message no longer evaluated" } });
          break;
        }
        job.resolve(m.name, m.rrtype).then(
          (answer) => reply({ answer }),
          (err: unknown) =>
            reply({
              error: {
                code: err instanceof DnsError ? err.code : (err as { code?: string })?.code,
                message: err instanceof Error ? err.message : String(err),
              },
            }),
        );
        break;
      }
      case "ready":
        if (this.#worker !== worker) break;
        this.#ready = true;
        for (const f of this.#onReady.splice(0)) f();
        break;
      case "pong":
        if (this.#pingTimer) clearTimeout(this.#pingTimer);
        this.#pingTimer = null;
        break;
    }
  }

  /** A deadline was missed: a thread that does not answer a ping in time is replaced. */
  #checkAlive(worker: Worker): void {
    if (this.#pingTimer) return;
    worker.postMessage({ t: "ping" } satisfies AuthThreadRequest);
    this.#pingTimer = setTimeout(() => {
      this.#pingTimer = null;
      if (this.#worker === worker) {
        void worker.terminate();
        this.#replace(worker);
      }
    }, STUCK_MS);
    this.#pingTimer.unref?.();
  }

  /** The thread is gone: what it held fails, and the next message starts a new one. */
  #replace(worker: Worker): void {
    if (this.#worker !== worker) return;
    this.#worker = null;
    this.#ready = false;
    if (this.#pingTimer) clearTimeout(this.#pingTimer);
    this.#pingTimer = null;
    const jobs = [...this.#jobs.values()];
    this.#jobs.clear();
    for (const job of jobs) job.settle(null);
  }
}

let thread: AuthThread | null = null;

/** The process's authentication thread (started at its first message). */
export function authThread(): AuthThread {
  thread ??= new AuthThread();
  return thread;
}
