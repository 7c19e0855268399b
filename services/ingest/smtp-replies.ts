/**
 * The SMTP listener's replies (docs/ingest.md, "SMTP"): how an ingest failure or an intake outcome is
 * rendered as a reply line, and how the replies to one batch of pipelined commands leave together.
 * Enhanced status codes per RFC 3463.
 */
import type { Socket } from "node:net";
import { AppError } from "../lib/errors.ts";
import type { IntakeOutcome } from "./intake.ts";

/** An error smtp-server turns into a reply line: `<responseCode> <enhanced code> <message>`. */
export class SmtpReplyError extends Error {
  constructor(
    readonly responseCode: number,
    message: string,
    /** the RFC 3463 code to reply with instead of the one smtp-server derives from `responseCode` */
    readonly enhancedCode?: string,
  ) {
    super(message);
    this.name = "SmtpReplyError";
  }
}

/**
 * The SMTP reply for an ingest failure; anything unexpected is transient (451). The 5xx codes here are
 * exactly intake.ts's permanent refusals (its `isTransient`); a test holds them together.
 */
export function smtpReplyFor(err: unknown): SmtpReplyError {
  if (err instanceof AppError) {
    switch (err.code) {
      case "ingest.too_large":
        return new SmtpReplyError(552, "Message exceeds the maximum message size");
      case "ingest.quota_exceeded":
        return new SmtpReplyError(552, "Mailbox storage quota exceeded");
      case "ingest.unparseable":
        return new SmtpReplyError(554, "Message cannot be parsed");
      case "projects.not_found":
        return new SmtpReplyError(550, "Mailbox unavailable");
      case "ingest.rejected":
        return new SmtpReplyError(550, err.message, "5.7.1");
    }
  }
  return new SmtpReplyError(451, "Temporary local failure, please try again later");
}

/**
 * The SMTP rendering of an intake outcome: the text after `250`, or the reply error of its deciding
 * failure (transient first, so one project's 451 makes the client retry the whole message).
 */
export function smtpReplyTo(outcome: IntakeOutcome): string {
  if (outcome.failure) throw smtpReplyFor(outcome.failure.error);
  return `Ok: accepted as ${outcome.accepted.map((r) => r.messagePk).join(", ")}`;
}

/**
 * Coalesces the replies to one batch of pipelined commands (RFC 2920) into one socket write.
 * smtp-server writes every reply line separately, so `MAIL`/`RCPT`/`DATA` sent together cost three
 * sends — three TCP segments and three wake-ups of the client. The socket is corked when a read
 * arrives and uncorked three event-loop turns later (smtp-server resumes its command reader and its
 * `setImmediate`, and the cached recipient lookup answers in a microtask), so the replies to one
 * batch leave together. A reply that takes longer (a recipient lookup that goes to the database, the
 * ingest behind DATA) is simply written on its own once the socket is uncorked; no reply is held for
 * more than those three turns (measured: two are not always enough, three coalesce every batch).
 */
export function coalesceReplies(socket: Socket, turns = 3): void {
  // Before smtp-server's own reader (registered first), which may answer synchronously.
  socket.prependListener("data", () => {
    if (socket.writableCorked > 0 || socket.destroyed) return;
    socket.cork();
    let seen = 0;
    const tick = (): void => {
      if (++seen >= turns) socket.uncork();
      else setImmediate(tick);
    };
    setImmediate(tick);
  });
}
