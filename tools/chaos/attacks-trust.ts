/**
 * The attack of the attack suite (tools/chaos/attacks.ts) on sender authentication: a sender who writes
 * `Authentication-Results: <the operator's trusted id>; dmarc=pass` into their own message, uploaded
 * over HTTP to an instance that trusts that id (`TRUSTED_AUTHSERV_IDS`). Twice: the field among the
 * author's own fields, and at the top of the message but below a receiver the operator does not trust.
 * Safe: the stored verdict (read back through the mapper preview by Message-ID) has `source: "none"`.
 */
import { buildMail, uniqueMessageId } from "../../test/support/raw-mail.ts";
import { api, brief, type Instance } from "./attack-kit.ts";
import type { Outcome } from "./attacks-smtp.ts";

/** The authserv-id the attacked instance trusts (its `TRUSTED_AUTHSERV_IDS`). */
export const TRUSTED_ID = "mx.operator.test";

const CLAIM = `${TRUSTED_ID}; spf=pass smtp.mailfrom=ceo@bank.test; dkim=pass header.d=bank.test; dmarc=pass (p=reject) header.from=bank.test`;

export async function forgedAuthResults(inst: Instance, apiKey: string): Promise<Outcome[]> {
  const variants: [string, Uint8Array][] = [
    [
      "among the author's fields",
      buildMail({
        messageId: uniqueMessageId(),
        from: "ceo@bank.test",
        extraHeaders: [`Authentication-Results: ${CLAIM}`],
      }),
    ],
    [
      "below an untrusted receiver",
      Buffer.concat([
        Buffer.from(
          `Authentication-Results: mx.elsewhere.test; spf=none\r\nAuthentication-Results: ${CLAIM}\r\n`,
        ),
        buildMail({ messageId: uniqueMessageId(), from: "ceo@bank.test" }),
      ]),
    ],
  ];
  const lines: Outcome[] = [];
  for (const [where, raw] of variants) {
    const res = await fetch(`${inst.base}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "message/rfc822", "x-api-key": apiKey },
      body: raw as Uint8Array<ArrayBuffer>,
    });
    const uploaded = (await res.json()) as { message_id?: string };
    if (res.status !== 202 || !uploaded.message_id) throw new Error(`upload: ${res.status}`);
    const preview = await api(inst.base, "POST", "/v1/mapper/preview", {
      key: apiKey,
      body: {
        config: {
          version: "v1",
          output: { source: { var: "message.auth.source" }, dmarc: { var: "message.auth.dmarc.result" } },
        },
        message_id: uploaded.message_id,
      },
    });
    const out = preview.json?.output as { source?: string; dmarc?: string } | undefined;
    lines.push({
      name: `forged auth results (${where === "among the author's fields" ? "author" : "hop"})`,
      outcome: `dmarc=pass claimed for ${TRUSTED_ID} ${where}: ${out ? `source ${out.source}, dmarc ${out.dmarc}` : brief(preview)}`,
      verdict: out?.source === "none" && out.dmarc === "none" ? "safe" : "UNSAFE",
    });
  }
  return lines;
}
