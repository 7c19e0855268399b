/**
 * Sends test messages over SMTP the way a sending MTA does: each message is retried — on another
 * listener if there are several — on connection errors, timeouts and 4xx replies until it gets a 250
 * or the deadline passes; a 5xx is final. The bytes of a message never change between tries, so a
 * retry of a message that was committed but whose 250 was lost is deduplicated by the service
 * (docs/ingest.md). Uses nodemailer, one connection per try.
 */
import nodemailer from "nodemailer";

/** One message to send: its Message-ID (with angle brackets) and raw bytes. */
export interface OutgoingMessage {
  messageId: string;
  raw: string;
}

/** What happened to one message. */
export interface SendOutcome {
  messageId: string;
  /** `Date.now()` when the 250 arrived; null if never accepted */
  acceptedAt: number | null;
  /** tries made (1 = accepted or refused at once) */
  tries: number;
  /** the final 5xx reply, or the last error when the deadline passed */
  failure: string | null;
}

/** Options of {@link sendMessages}. */
export interface SendOptions {
  messages: OutgoingMessage[];
  to: string;
  /** SMTP ports of the listeners, tried in turn */
  ports: number[];
  /** concurrent clients */
  clients: number;
  /** if set, message i is not sent before `start + i * 1000 / rate` (a steady load) */
  rate?: number;
  /** give up on a message after this time (`Date.now()` based) */
  deadline: number;
}

let runSeq = 0;

/** `count` small text messages with unique Message-IDs (`<chaos.<run>.<i>@example.com>`). */
export function makeMessages(count: number, to: string, tag = "chaos"): OutgoingMessage[] {
  const run = `${process.pid}.${Date.now()}.${++runSeq}`;
  return Array.from({ length: count }, (_, i) => {
    const messageId = `<${tag}.${run}.${i}@example.com>`;
    const raw = [
      "From: Chaos Sender <sender@example.com>",
      `To: ${to}`,
      `Subject: ${tag} message ${i}`,
      `Message-ID: ${messageId}`,
      "Date: Mon, 06 May 2024 07:08:09 +0000",
      "MIME-Version: 1.0",
      "Content-Type: text/plain; charset=utf-8",
      "",
      `Message ${i} of run ${run}. Nothing lost, nothing doubled.`,
      "",
    ].join("\r\n");
    return { messageId, raw };
  });
}

interface SmtpError {
  responseCode?: number;
  response?: string;
  code?: string;
  message?: string;
}

/** Sends every message; resolves with one outcome per message, in input order. */
export async function sendMessages(opts: SendOptions): Promise<SendOutcome[]> {
  const transports = opts.ports.map((port) =>
    nodemailer.createTransport({
      host: "127.0.0.1",
      port,
      secure: false,
      ignoreTLS: true,
      connectionTimeout: 5000,
      greetingTimeout: 5000,
      socketTimeout: 20_000,
    }),
  );
  const outcomes: SendOutcome[] = opts.messages.map((m) => ({
    messageId: m.messageId,
    acceptedAt: null,
    tries: 0,
    failure: null,
  }));
  const start = Date.now();
  let next = 0;
  let turn = Math.floor(Math.random() * transports.length);

  const sendOne = async (i: number): Promise<void> => {
    const m = opts.messages[i] as OutgoingMessage;
    const out = outcomes[i] as SendOutcome;
    let backoff = 25;
    while (Date.now() < opts.deadline) {
      const transport = transports[turn++ % transports.length];
      if (!transport) throw new Error("no SMTP ports");
      out.tries++;
      try {
        await transport.sendMail({
          envelope: { from: "sender@example.com", to: [opts.to] },
          raw: m.raw,
        });
        out.acceptedAt = Date.now();
        out.failure = null;
        return;
      } catch (err) {
        const e = err as SmtpError;
        const text = e.response ?? `${e.code ?? "error"}: ${e.message ?? String(err)}`;
        if (e.responseCode !== undefined && e.responseCode >= 500) {
          out.failure = text; // permanent refusal: a real MTA bounces the message
          return;
        }
        out.failure = text;
        await Bun.sleep(backoff + Math.random() * backoff);
        backoff = Math.min(backoff * 2, 1000);
      }
    }
  };

  const client = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= opts.messages.length) return;
      if (opts.rate) {
        const due = start + (i * 1000) / opts.rate;
        if (due > Date.now()) await Bun.sleep(due - Date.now());
      }
      await sendOne(i);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, opts.clients) }, client));
  } finally {
    for (const t of transports) t.close();
  }
  return outcomes;
}
