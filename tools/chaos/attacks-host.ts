/**
 * The attacks of the attack suite (tools/chaos/attacks.ts) that look at the host rather than the API:
 * the modes of what the service keeps under DATA_DIR (a local account must read nothing there), and
 * how much memory one big message costs the process (peak RSS growth from `/proc`, as a multiple of
 * the message size).
 */
import { randomBytes } from "node:crypto";
import { lstatSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { buildMail } from "../../test/support/raw-mail.ts";
import { type Instance, mib, peakGrowth, type Receiver } from "./attack-kit.ts";
import { delivered } from "./attacks-http.ts";
import { type Outcome, smtpSend } from "./attacks-smtp.ts";

const safeIf = (ok: boolean): Outcome["verdict"] => (ok ? "safe" : "UNSAFE");

/** Safe when every directory under DATA_DIR (itself included) is 0700 and every file 0600. */
export function dataDirModes(dataDir: string): Outcome {
  const wrong: string[] = [];
  let count = 0;
  const visit = (path: string) => {
    const st = lstatSync(path);
    if (st.isSymbolicLink()) return;
    count++;
    const mode = st.mode & 0o777;
    const want = st.isDirectory() ? 0o700 : 0o600;
    if (mode !== want) wrong.push(`${relative(dataDir, path) || "."} ${mode.toString(8)}`);
    if (st.isDirectory()) for (const e of readdirSync(path)) visit(join(path, e));
  };
  visit(dataDir);
  return {
    name: "data dir modes",
    outcome: `${count} entries, ${wrong.length} not private${wrong.length ? `: ${wrong.slice(0, 4).join(", ")}${wrong.length > 4 ? ", …" : ""}` : ""}`,
    verdict: safeIf(wrong.length === 0),
  };
}

/**
 * One message of about `size` bytes (attachments under the 25 MiB per-file limit) over SMTP; the peak
 * RSS growth of the child until its event is delivered, as a multiple of the message size. Judged
 * (< 3×) only when `judge`.
 */
export async function bigMessage(
  inst: Instance,
  to: string,
  receiver: Receiver,
  size: number,
  judge: boolean,
) {
  const messageId = `<big.${Date.now()}.${process.pid}@example.com>`;
  const payload = Math.floor(size / 1.37); // base64 in 76-character lines is 1.37× the bytes
  const parts = Math.ceil(payload / (20 * 1048576));
  const raw = buildMail({
    messageId,
    to,
    attachments: Array.from({ length: parts }, (_, i) => ({
      filename: `part${i}.bin`,
      contentType: "application/octet-stream",
      content: randomBytes(Math.floor(payload / parts)),
    })),
  });
  const run = await peakGrowth(inst.pid, async () => {
    const reply = await smtpSend(inst.smtpPort, to, raw);
    if (reply.code === 250) await delivered(receiver, messageId);
    return reply;
  });
  const ratio = run.growth / raw.length;
  const verdict: Outcome["verdict"] = judge ? safeIf(run.result.code === 250 && ratio < 3) : "info";
  return {
    name: "one big message memory",
    outcome:
      `${mib(raw.length)} message: ${run.result.code}; RSS ${mib(run.before)} → peak ${mib(run.peak)} ` +
      `(+${mib(run.growth)}, ${ratio.toFixed(2)}× the message${judge ? ", target < 3×" : ", not judged in quick mode"})`,
    verdict,
  } satisfies Outcome;
}
