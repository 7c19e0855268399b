/**
 * Sends one message to a running mailhook over SMTP, the way a mail server would.
 *
 *   bun tools/send-mail --to <token>@in.localhost --eml message.eml            # the file as-is
 *   bun tools/send-mail --to <token>@in.localhost --subject "Invoice 42" \
 *       --text "Please find it attached." --attach invoice.pdf --attach logo.png
 *   options: --from sender@example.com  --host 127.0.0.1  --port 2525  --html "<p>…</p>"
 *
 * Prints the server's reply (`250 … Ok: accepted as msg_…`) and exits 0; on a refusal (550 unknown
 * recipient, 552 too large, 451 try later, …) or a connection failure prints the reply or error and
 * exits 1. Uses nodemailer; STARTTLS is used when the server offers it (self-signed accepted: local use).
 */
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { parseArgs } from "node:util";
import nodemailer from "nodemailer";

/** Options of {@link sendMail}. */
export interface SendMailOptions {
  to: string[];
  from?: string;
  host?: string;
  port?: number;
  /** Path of an RFC 5322 message to send byte for byte (the envelope comes from `to`/`from`). */
  eml?: string;
  subject?: string;
  text?: string;
  html?: string;
  /** Paths of files to attach to a generated message. */
  attach?: string[];
}

/** What the server answered. */
export interface SendMailResult {
  /** The final reply line, e.g. `250 2.0.0 Ok: accepted as msg_…`. */
  response: string;
  messageId: string;
  accepted: string[];
  rejected: string[];
}

/** Sends one message; rejects with the server's reply in the error message when it is refused. */
export async function sendMail(opts: SendMailOptions): Promise<SendMailResult> {
  const transport = nodemailer.createTransport({
    host: opts.host ?? "127.0.0.1",
    port: opts.port ?? 2525,
    secure: false,
    tls: { rejectUnauthorized: false },
    connectionTimeout: 10_000,
  });
  const from = opts.from ?? "sender@example.com";
  try {
    const info = opts.eml
      ? await transport.sendMail({ envelope: { from, to: opts.to }, raw: readFileSync(opts.eml) })
      : await transport.sendMail({
          from,
          to: opts.to,
          subject: opts.subject ?? "Hello from bun tools/send-mail",
          text: opts.text ?? "This message was sent by bun tools/send-mail.",
          ...(opts.html ? { html: opts.html } : {}),
          attachments: (opts.attach ?? []).map((path) => ({ filename: basename(path), path })),
        });
    return {
      response: info.response,
      messageId: info.messageId,
      accepted: info.accepted.map(String),
      rejected: info.rejected.map(String),
    };
  } finally {
    transport.close();
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      to: { type: "string", multiple: true },
      from: { type: "string" },
      host: { type: "string", default: "127.0.0.1" },
      port: { type: "string", default: "2525" },
      eml: { type: "string" },
      subject: { type: "string" },
      text: { type: "string" },
      html: { type: "string" },
      attach: { type: "string", multiple: true },
    },
  });
  if (!values.to?.length) {
    console.error(
      "usage: bun tools/send-mail --to <inbound address> [--eml file.eml] [--subject …] [--text …] [--attach file]… [--host 127.0.0.1 --port 2525]",
    );
    process.exit(2);
  }
  try {
    const result = await sendMail({
      to: values.to,
      host: values.host,
      port: Number(values.port),
      ...(values.from ? { from: values.from } : {}),
      ...(values.eml ? { eml: values.eml } : {}),
      ...(values.subject ? { subject: values.subject } : {}),
      ...(values.text ? { text: values.text } : {}),
      ...(values.html ? { html: values.html } : {}),
      ...(values.attach ? { attach: values.attach } : {}),
    });
    console.log(result.response);
    console.log(`accepted: ${result.accepted.join(", ") || "(none)"}`);
    if (result.rejected.length) console.log(`rejected: ${result.rejected.join(", ")}`);
    process.exit(result.rejected.length ? 1 : 0);
  } catch (err) {
    const e = err as { response?: string; code?: string; message: string };
    console.error(`send failed: ${e.response ?? e.message}${e.code ? ` (${e.code})` : ""}`);
    process.exit(1);
  }
}
