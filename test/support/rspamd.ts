/**
 * A real rspamd on loopback for the spam-verdict tests: Debian's rspamd with a private configuration
 * in a temp dir. Only the scanner ("normal") worker runs, on a free port; every module that needs the
 * network or redis is disabled, DNS goes to a closed loopback port, hyperscan is off and the TLD list is
 * tiny, so it starts in seconds on a small machine. GTUBE detection is part of rspamd itself.
 * `.ci/run` installs rspamd.
 */

import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { type Subprocess, spawn } from "bun";

export const RSPAMD = "/usr/bin/rspamd";
const SYSTEM_MODULES = "/etc/rspamd/modules.d";
/** Modules that work on the message alone. */
const LOCAL_MODULES = new Set([
  "chartable",
  "regexp",
  "mime_types",
  "mid",
  "forged_recipients",
  "once_received",
]);

/** The GTUBE test string (rspamd rejects a message carrying it). */
export const GTUBE = "XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X";

export interface RunningRspamd {
  /** `http://127.0.0.1:<port>`, an `RSPAMD_URL` value */
  url: string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Starts rspamd and resolves once `/ping` answers (up to 60 s: it loads its rules first). */
export async function startRspamd(): Promise<RunningRspamd> {
  if (!existsSync(RSPAMD)) throw new Error(`${RSPAMD} is missing: apt-get install -y rspamd (.ci/run does)`);
  const dir = mkdtempSync(join(tmpdir(), "mailhook-rspamd-"));
  for (const sub of ["local.d", "db", "run", "log"]) mkdirSync(join(dir, sub));
  for (const file of readdirSync(SYSTEM_MODULES)) {
    if (!LOCAL_MODULES.has(basename(file, ".conf")))
      writeFileSync(join(dir, "local.d", file), "enabled = false;\n");
  }
  writeFileSync(join(dir, "tld.dat"), "com\nnet\norg\ntest\n");
  writeFileSync(
    join(dir, "local.d", "options.inc"),
    [
      'filters = "chartable,regexp";',
      `url_tld = "${join(dir, "tld.dat")}";`,
      "disable_hyperscan = true;",
      // Port 9 on loopback: nothing answers, so no lookup leaves the machine.
      'dns { nameserver = ["127.0.0.1:9"]; timeout = 0.1s; retransmits = 0; }',
      "",
    ].join("\n"),
  );
  const port = await freePort();
  const conf = join(dir, "rspamd.conf");
  writeFileSync(
    conf,
    [
      '.include "$CONFDIR/common.conf"',
      "options {",
      '  pidfile = "$RUNDIR/rspamd.pid";',
      '  .include "$CONFDIR/options.inc"',
      '  .include(try=true; priority=1,duplicate=merge) "$LOCAL_CONFDIR/local.d/options.inc"',
      "}",
      'logging { type = "file"; filename = "$LOGDIR/rspamd.log"; level = "error"; }',
      'worker "normal" {',
      `  bind_socket = "127.0.0.1:${port}";`,
      "  count = 1;",
      '  .include "$CONFDIR/worker-normal.inc"',
      "}",
      "",
    ].join("\n"),
  );
  const user = process.getuid?.() === 0 ? ["-u", "root", "-g", "root", "-i"] : [];
  const proc: Subprocess = spawn(
    [
      RSPAMD,
      "-f",
      ...user,
      "-c",
      conf,
      `--var=LOCAL_CONFDIR=${dir}`,
      `--var=DBDIR=${join(dir, "db")}`,
      `--var=RUNDIR=${join(dir, "run")}`,
      `--var=LOGDIR=${join(dir, "log")}`,
    ],
    { stdout: "ignore", stderr: "ignore" },
  );
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    proc.kill();
    await proc.exited;
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (proc.exitCode !== null) {
      await stop();
      throw new Error(`rspamd exited (${proc.exitCode}); see its log under ${dir}/log`);
    }
    const ok = await fetch(`${url}/ping`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error("rspamd did not answer /ping within 60 s");
    }
    await Bun.sleep(100);
  }
  let stopped = false;
  return {
    url,
    async stop() {
      if (stopped) return;
      stopped = true;
      await stop();
    },
  };
}
