/**
 * The SMTP attacks of the attack suite (tools/chaos/attacks.ts), each returning one report line: one
 * client holding connection slots and dripping a byte at a time through DATA, and one transaction
 * naming more recipients than allowed. Also the plain "send this raw message" used by the other attacks
 * (no credentials: anyone on the internet can do what these do).
 *
 * The attacking client connects from 127.0.0.2 and the well-behaved sender from 127.0.0.1, so a
 * per-address limit can tell them apart (the whole of 127.0.0.0/8 is loopback on Linux).
 */
import { eventually } from "../../test/support/eventually.ts";
import { dotStuff, RawSmtp, type SmtpReply } from "../../test/support/smtp.ts";
import { makeMessages, sendMessages } from "./mta.ts";

/** One line of the report. `info` is measured and printed but not judged; `ERROR` is a harness failure. */
export interface Outcome {
  name: string;
  outcome: string;
  verdict: "safe" | "UNSAFE" | "info" | "ERROR";
}

/** The address the attacking SMTP client connects from. */
export const ATTACKER_ADDRESS = "127.0.0.2";

/** Sends one raw message over SMTP without credentials; returns the reply to the end of DATA. */
export async function smtpSend(port: number, to: string, raw: Uint8Array, replyTimeoutMs = 120_000) {
  const c = await RawSmtp.connect(port);
  try {
    const [rcpt] = await c.envelope("sender@example.com", [to]);
    if (rcpt?.code !== 250) return rcpt as SmtpReply;
    const go = await c.command("DATA");
    if (go.code !== 354) return go;
    await c.write(dotStuff(raw));
    await c.write(".\r\n");
    return await c.reply(replyTimeoutMs);
  } finally {
    await c.quit();
  }
}

/** Options of {@link slotExhaustion}. */
export interface SlotOptions {
  /** connections the attacker opens from one address */
  connections: number;
  /** the SMTP_MAX_CONNECTIONS_PER_IP the instance runs with */
  perIp: number;
  /**
   * where the attacker drips: `data` (after 354; cut by the DATA deadline, a minute by default) or
   * `command` (a command line that never ends; cut by the session deadline, which the quick mode sets to
   * seconds)
   */
  phase: "data" | "command";
  /** one byte per this many ms */
  dripEveryMs: number;
  /** how long the dripping connections may live before the attack counts as a success */
  dripWaitMs: number;
}

/**
 * Opens `connections` connections from {@link ATTACKER_ADDRESS}; those greeted 220 drip (see
 * {@link SlotOptions.phase}). Safe when every connection beyond `perIp` gets `421 4.7.0`, a normal sender's message gets 250
 * meanwhile, and the service cuts every dripping connection within `dripWaitMs`.
 */
export async function slotExhaustion(port: number, to: string, o: SlotOptions): Promise<Outcome> {
  const name = "smtp slot exhaustion";
  const held: RawSmtp[] = [];
  const refusals: string[] = [];
  let errors = 0;
  const started = Date.now();
  try {
    for (let i = 0; i < o.connections; i++) {
      try {
        const c = await RawSmtp.connect(port, "127.0.0.1", ATTACKER_ADDRESS);
        if (c.greeting.code === 220) held.push(c);
        else {
          refusals.push(c.greeting.raw);
          c.destroy();
        }
      } catch {
        errors++; // reset or no greeting: refused, but not with the reply the limit promises
      }
    }
    let ready = 0;
    for (const c of held) {
      const go =
        o.phase === "data"
          ? await c
              .envelope("dripper@example.com", [to])
              .then(() => c.command("DATA"))
              .catch(() => null)
          : await c.command("EHLO dripper.test").catch(() => null);
      if (go?.code === (o.phase === "data" ? 354 : 250)) ready++;
    }
    const dripping = (async () => {
      const end = Date.now() + o.dripWaitMs;
      while (Date.now() < end && held.some((c) => !c.closed)) {
        for (const c of held) if (!c.closed && !c.socket.destroyed) c.socket.write("x");
        await Bun.sleep(o.dripEveryMs); // the attack's pace, not a wait for work
      }
    })();
    const [normal] = await sendMessages({
      messages: makeMessages(1, to, "attack-normal"),
      to,
      ports: [port],
      clients: 1,
      deadline: Date.now() + 10_000,
    });
    let cutAfterMs: number | null = null;
    try {
      await eventually(
        "every dripping connection to be closed by the service",
        () => held.every((c) => c.closed),
        o.dripWaitMs,
        { everyMs: 50 },
      );
      cutAfterMs = Date.now() - started;
    } catch {}
    await dripping;
    const proper = refusals.filter((r) => r.startsWith("421") && r.includes("4.7.0")).length;
    const extra = Math.max(0, o.connections - o.perIp);
    const safe =
      held.length <= o.perIp &&
      proper === extra &&
      errors === 0 &&
      normal?.acceptedAt != null &&
      cutAfterMs !== null;
    const firstRefusal = refusals[0] ? ` ("${refusals[0].slice(0, 60)}")` : "";
    return {
      name,
      outcome:
        `${o.connections} connections from ${ATTACKER_ADDRESS}: ${held.length} greeted (${ready} dripping ${o.phase === "data" ? "in DATA" : "a command"} every ${o.dripEveryMs / 1000} s), ` +
        `${proper}/${extra} extra got 421 4.7.0${firstRefusal}` +
        `${errors ? `, ${errors} reset without a reply` : ""}; normal sender ` +
        `${normal?.acceptedAt != null ? `250 after ${normal.tries} tries` : `not accepted (${normal?.failure})`}; ` +
        (cutAfterMs !== null
          ? `drippers cut after ${(cutAfterMs / 1000).toFixed(1)} s`
          : `${held.filter((c) => !c.closed).length} drippers still connected after ${o.dripWaitMs / 1000} s`),
      verdict: safe ? "safe" : "UNSAFE",
    };
  } finally {
    for (const c of held) c.destroy();
  }
}

/**
 * One transaction with `count` RCPT commands (plus-tagged forms of the inbound address). Safe when at
 * most `limit` are accepted and the first one beyond gets `452 4.5.3`.
 */
export async function recipientFlood(
  port: number,
  to: string,
  count: number,
  limit: number,
): Promise<Outcome> {
  const [local, domain] = to.split("@") as [string, string];
  const c = await RawSmtp.connect(port);
  const codes: number[] = [];
  let firstRefusal: SmtpReply | null = null;
  try {
    await c.command("EHLO client.test");
    await c.command("MAIL FROM:<flood@example.com>");
    for (let i = 0; i < count && !c.closed; i++) {
      const r = await c.command(`RCPT TO:<${local}+r${i}@${domain}>`).catch(() => null);
      if (!r) break;
      codes.push(r.code);
      if (r.code !== 250) firstRefusal ??= r;
    }
  } finally {
    await c.quit();
  }
  const accepted = codes.filter((x) => x === 250).length;
  const atLimit = codes[limit];
  const safe = accepted <= limit && atLimit === 452 && firstRefusal?.raw.includes("4.5.3") === true;
  return {
    name: "smtp recipients",
    outcome:
      `${codes.length}/${count} RCPT answered, ${accepted} accepted (limit ${limit}); ` +
      (firstRefusal ? `first refusal: "${firstRefusal.raw.slice(0, 60)}"` : "none refused"),
    verdict: safe ? "safe" : "UNSAFE",
  };
}
