/**
 * What the service can tell about a message's sender, computed once per message at intake, before it
 * is stored (whatever number of projects it goes to) and kept in `messages.parsed` as `auth` and
 * `spam` (docs/security.md, "Sender authentication"):
 *
 * - over our SMTP: SPF, DKIM, DMARC and ARC from the connection (smtp-auth.ts), `source: "smtp"`;
 * - any other way in: the topmost trusted `Authentication-Results` field (auth-results.ts), else
 *   `source: "none"`; a header is never read for mail that came over our SMTP;
 * - with `RSPAMD_URL`: rspamd's score (spam.ts), for every message.
 *
 * Authentication and the scan run side by side; each has its own bound (4 s and 5 s), and neither can
 * make the message be refused: a failure degrades the verdict (`temperror`, `spam: null`).
 */
import { open } from "node:fs/promises";
import { type MapperAuth, type MapperSpam, noAuth } from "../../../mapper/types.ts";
import type { AppContext } from "../../context.ts";
import type { SourceType } from "../../lib/message.ts";
import type { RawSource } from "../raw.ts";
import { headerSection, trustedHeaderAuth } from "./auth-results.ts";
import {
  type AuthInput,
  authenticateSmtp,
  type SmtpClientFacts,
  unauthenticable,
  unevaluated,
} from "./smtp-auth.ts";
import { scanForSpam } from "./spam.ts";

/** The verdict stored with a message. */
export interface SenderVerdict {
  auth: MapperAuth;
  spam: MapperSpam | null;
}

/** The SMTP transaction a message came in (absent for other sources). */
export interface SmtpTransaction extends SmtpClientFacts {
  rcptTo: readonly string[];
}

/** Header sections longer than this are not read for Authentication-Results (the rest is body or abuse). */
const MAX_HEADER_BYTES = 256 * 1024;

/** The verdict of one message; never throws. */
export async function assessSender(
  ctx: AppContext,
  raw: RawSource,
  source: SourceType,
  smtp: SmtpTransaction | null,
): Promise<SenderVerdict> {
  const { config } = ctx;
  const authOptions = { resolver: ctx.dns, mta: config.inboundDomain, inProcess: !config.senderAuthThread };
  const spam = config.rspamdUrl
    ? scanForSpam(config.rspamdUrl, bodyOf(raw), {
        ...(smtp ? { ip: smtp.ip, helo: smtp.helo, mailFrom: smtp.mailFrom, rcptTo: smtp.rcptTo } : {}),
        hostname: config.inboundDomain,
      })
    : Promise.resolve(null);
  const auth =
    source === "smtp" && smtp
      ? headerOf(raw).then(
          ({ header, complete }) => {
            const problem = unauthenticable(header, complete);
            if (problem) {
              ctx.logger.info("sender authentication skipped", { reason: problem });
              return unevaluated();
            }
            return authenticateSmtp(authInput(raw), smtp, authOptions);
          },
          () => authenticateSmtp(authInput(raw), smtp, authOptions),
        )
      : headerOf(raw).then(
          ({ header }) => trustedHeaderAuth(header, config.trustedAuthservIds),
          () => noAuth(),
        );
  return { auth: await auth, spam: await spam };
}

function bytesOf(raw: RawSource): Uint8Array | undefined {
  return raw instanceof Uint8Array ? raw : raw.bytes;
}

function bodyOf(raw: RawSource): Uint8Array | Blob {
  return bytesOf(raw) ?? Bun.file((raw as { path: string }).path);
}

function authInput(raw: RawSource): AuthInput {
  return bytesOf(raw) ?? { path: (raw as { path: string }).path };
}

/**
 * The header section of a message, read within {@link MAX_HEADER_BYTES}; `complete` when the section
 * ended within that (or the whole message is shorter).
 */
async function headerOf(raw: RawSource): Promise<{ header: Buffer; complete: boolean }> {
  const whole = (buf: Uint8Array) => {
    const header = headerSection(buf);
    return { header, complete: header.byteLength < buf.byteLength || buf.byteLength < MAX_HEADER_BYTES };
  };
  const bytes = bytesOf(raw);
  if (bytes) return whole(bytes.subarray(0, MAX_HEADER_BYTES));
  const file = await open((raw as { path: string }).path, "r");
  try {
    const buf = Buffer.alloc(MAX_HEADER_BYTES);
    const { bytesRead } = await file.read(buf, 0, MAX_HEADER_BYTES, 0);
    return whole(buf.subarray(0, bytesRead));
  } finally {
    await file.close();
  }
}
