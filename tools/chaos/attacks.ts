/**
 * The attack suite: re-runs the attacks of docs/security.md against running `serve` processes and
 * prints one line per attack — its name, what was observed, and `safe` or `UNSAFE` (`info` for a
 * measurement that is only reported, `ERROR` when the harness itself failed). Exit code 1 when any line
 * is UNSAFE or ERROR.
 *
 *   bun tools/chaos/attacks.ts [--quick] [--db pglite|postgres] [--drip-wait-s N]
 *
 * Two instances, each on a fresh DATA_DIR and database: A (private endpoints allowed, so webhooks reach
 * the local receiver; `METRICS_TOKEN` set) for the mail, download, capture, SMTP, metrics, docs and
 * file-mode attacks; B (`ALLOW_PRIVATE_ENDPOINTS=false`, no SMTP) for the request-body and SSRF attacks.
 * The memory measurements run first on their fresh instance, so earlier work does not hide growth.
 * `--quick` (CI) uses small sizes and small limits and finishes in well under a minute; the full mode
 * uses the attacks' original sizes (49 MB message, 6 × 10 MB bodies, 1,000 recipients, 100 dripping
 * connections) and the service's default limits.
 */

import { parseArgs } from "node:util";
import { type DbKind, type Instance, type Receiver, startInstance, startReceiver } from "./attack-kit.ts";
import { bigMessage, dataDirModes } from "./attacks-host.ts";
import {
  attachmentSwap,
  docsAssets,
  metricsToken,
  preAuthBody,
  ssrf,
  ssrfGuardOnly,
} from "./attacks-http.ts";
import { type Outcome, recipientFlood, slotExhaustion } from "./attacks-smtp.ts";
import { forgedAuthResults, TRUSTED_ID } from "./attacks-trust.ts";
import { createProject, setupProject } from "./cluster.ts";

/** Options of {@link run}. */
export interface AttackOptions {
  db: DbKind;
  quick: boolean;
  /** size of the one big message whose memory is measured */
  bigMessageBytes: number;
  /** size and number of the unauthenticated nested-JSON bodies sent at once */
  bodyBytes: number;
  bodyCopies: number;
  /** SMTP_MAX_CONNECTIONS_PER_IP and SMTP_MAX_RECIPIENTS of instance A (set in its environment) */
  perIp: number;
  maxRecipients: number;
  /** RCPT commands in the one flooding transaction */
  recipients: number;
  /** connections the slot attacker opens from one address, where and how fast it drips, how long it may live */
  dripConnections: number;
  dripPhase: "data" | "command";
  dripEveryMs: number;
  dripWaitMs: number;
  /** more environment for instance A (the quick mode's small limits and short session deadline) */
  envA: Record<string, string>;
}

/**
 * CI: small sizes, small limits, and a 3 s SMTP session deadline, which cuts a client dripping a
 * command line (the DATA deadline is fixed at a minute and more, too long for CI; the full mode
 * drips through DATA).
 */
export const QUICK: AttackOptions = {
  db: "pglite",
  quick: true,
  bigMessageBytes: 5_000_000,
  bodyBytes: 2_000_000,
  bodyCopies: 1,
  perIp: 3,
  maxRecipients: 5,
  recipients: 6,
  dripConnections: 4,
  dripPhase: "command",
  dripEveryMs: 500,
  dripWaitMs: 15_000,
  envA: { SMTP_MAX_CONNECTIONS_PER_IP: "3", SMTP_MAX_RECIPIENTS: "5", SMTP_SESSION_TIMEOUT_S: "3" },
};

/** The attacks' original sizes against the service's default limits. */
export const FULL: AttackOptions = {
  db: "pglite",
  quick: false,
  bigMessageBytes: 49_000_000,
  bodyBytes: 10_000_000,
  bodyCopies: 6,
  perIp: 10,
  maxRecipients: 100,
  recipients: 1000,
  dripConnections: 100,
  dripPhase: "data",
  dripEveryMs: 20_000,
  dripWaitMs: 5 * 60_000,
  envA: {},
};

const METRICS_TOKEN = "attacks-metrics-token-0123456789";

/** Runs an attack; a harness failure becomes an ERROR line instead of ending the suite. */
async function attempt(name: string, work: () => Promise<Outcome | Outcome[]>): Promise<Outcome[]> {
  try {
    const r = await work();
    return Array.isArray(r) ? r : [r];
  } catch (err) {
    return [{ name, outcome: `harness error: ${(err as Error).message.split("\n")[0]}`, verdict: "ERROR" }];
  }
}

/** Runs every attack; `report` gets each line as soon as it is known. Cleans up whatever happens. */
export async function run(o: AttackOptions, report: (o: Outcome) => void = () => {}): Promise<Outcome[]> {
  const all: Outcome[] = [];
  const add = (lines: Outcome[]) => {
    for (const l of lines) {
      all.push(l);
      report(l);
    }
  };
  const receiver: Receiver = startReceiver();
  let a: Instance | null = null;
  let b: Instance | null = null;
  try {
    a = await startInstance(o.db, "a", { ALLOW_PRIVATE_ENDPOINTS: "true", METRICS_TOKEN, ...o.envA });
    const ia = a;
    const hook = `http://127.0.0.1:${receiver.port}/hook?token=secret123`;
    const p = await setupProject(ia.base, hook, 5);
    const mailOn = (attack: () => Promise<Outcome | Outcome[]>) =>
      ia.smtpPort ? attack() : Promise.reject(new Error("SMTP is off"));
    add(
      await attempt("one big message memory", () =>
        mailOn(() => bigMessage(ia, p.inbound, receiver, o.bigMessageBytes, !o.quick)),
      ),
    );
    add(await attempt("attachment swap", () => attachmentSwap(ia, p, receiver)));
    add(
      await attempt("smtp recipients", () =>
        recipientFlood(ia.smtpPort, p.inbound, o.recipients, o.maxRecipients),
      ),
    );
    add(
      await attempt("smtp slot exhaustion", () =>
        slotExhaustion(ia.smtpPort, p.inbound, {
          connections: o.dripConnections,
          perIp: o.perIp,
          phase: o.dripPhase,
          dripEveryMs: o.dripEveryMs,
          dripWaitMs: o.dripWaitMs,
        }),
      ),
    );
    add(await attempt("metrics token", () => metricsToken(ia, METRICS_TOKEN)));
    add(await attempt("docs assets", () => docsAssets(ia)));
    add(await attempt("data dir modes", async () => dataDirModes(ia.dataDir)));
    await ia.stop();
    a = null;

    b = await startInstance(o.db, "b", {
      ALLOW_PRIVATE_ENDPOINTS: "false",
      SMTP_PORT: "0",
      RETRY_SCHEDULE: "1h",
      TRUSTED_AUTHSERV_IDS: TRUSTED_ID,
    });
    const ib = b;
    // No endpoint: with ALLOW_PRIVATE_ENDPOINTS off a loopback one is refused at creation, and these
    // attacks need only the project's key.
    const q = await createProject(ib.base);
    add(await attempt("pre-auth body", () => preAuthBody(ib, q.apiKey, o.bodyBytes, o.bodyCopies)));
    add(await attempt("ssrf", () => ssrf(ib, ["http://[::ffff:0:7f00:1]/"])));
    add(await attempt("forged auth results", () => forgedAuthResults(ib, q.apiKey)));
    add(ssrfGuardOnly(["168.63.129.16"]));
  } catch (err) {
    add([{ name: "harness", outcome: `could not run: ${(err as Error).message}`, verdict: "ERROR" }]);
  } finally {
    await a?.stop();
    await b?.stop();
    receiver.stop();
  }
  return all;
}

/** One report line: the attack's name, what was observed, the verdict. */
export function formatLine(o: Outcome): string {
  return `${o.name.padEnd(34)} ${o.outcome}  ${o.verdict}`;
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      quick: { type: "boolean", default: false },
      db: { type: "string", default: "pglite" },
      "drip-wait-s": { type: "string" },
    },
  });
  const base = values.quick ? QUICK : FULL;
  const db: DbKind = values.db === "postgres" ? "postgres" : "pglite";
  const wait = values["drip-wait-s"];
  const t0 = Date.now();
  console.log(`attack suite (${values.quick ? "quick" : "full"}, ${db})`);
  const lines = await run({ ...base, db, ...(wait ? { dripWaitMs: Number(wait) * 1000 } : {}) }, (l) =>
    console.log(formatLine(l)),
  );
  const bad = lines.filter((l) => l.verdict === "UNSAFE" || l.verdict === "ERROR");
  console.log(
    `${lines.length} lines, ${bad.length} unsafe or failed, ${((Date.now() - t0) / 1000).toFixed(1)} s`,
  );
  process.exit(bad.length === 0 ? 0 : 1);
}
