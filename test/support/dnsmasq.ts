/**
 * A real DNS server on loopback for the sender-authentication and domain tests: Debian's dnsmasq with a
 * private config in a temp dir (no /etc/resolv.conf, no /etc/hosts, no upstream), answering only the
 * records a test gives it and NXDOMAIN for every other name under its zones. `.ci/run` installs dnsmasq.
 */

import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Subprocess, spawn } from "bun";

export const DNSMASQ = "/usr/sbin/dnsmasq";

/** Records to serve. TXT values longer than 255 bytes are split into strings of 255 (RFC 1035 §3.3.14). */
export interface Zone {
  /** domains answered locally (NXDOMAIN for names without records) */
  domains: string[];
  /** a name's TXT value, or its several values (one record each) */
  txt?: Record<string, string | string[]>;
  a?: Record<string, string>;
  mx?: Record<string, string>;
  /** MX records with their priorities, several per name allowed (beside `mx`, whose priority is 10) */
  mxRecords?: { name: string; exchange: string; priority: number }[];
  /** TTL of every record (dnsmasq's local-ttl), seconds */
  ttl?: number;
}

export interface RunningDnsmasq {
  port: number;
  /** `127.0.0.1:<port>`, a `DNS_SERVERS` value */
  server: string;
  /** Serves `zone` from now on, on the same port (dnsmasq is restarted: it reads records only at start) */
  update(zone: Zone): Promise<void>;
  /** Stops the server (a test of a resolver that stopped answering) */
  stop(): Promise<void>;
}

/** A free port for both UDP and TCP on 127.0.0.1 (TCP bound and released; dnsmasq binds both). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function quoteChunks(text: string): string {
  const chunks: string[] = [];
  for (let i = 0; i < text.length; i += 255) chunks.push(text.slice(i, i + 255));
  return chunks.map((c) => `"${c.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`).join(",");
}

function config(zone: Zone, port: number): string {
  const lines = [
    "no-resolv",
    "no-hosts",
    "no-poll",
    "bind-interfaces",
    "listen-address=127.0.0.1",
    `port=${port}`,
    `local-ttl=${zone.ttl ?? 300}`,
    `neg-ttl=${zone.ttl ?? 300}`,
    "pid-file=",
    "user=",
    "log-facility=/dev/null",
    ...zone.domains.map((d) => `local=/${d}/`),
    ...Object.entries(zone.txt ?? {}).flatMap(([name, texts]) =>
      (Array.isArray(texts) ? texts : [texts]).map((text) => `txt-record=${name},${quoteChunks(text)}`),
    ),
    ...Object.entries(zone.a ?? {}).map(([name, ip]) => `host-record=${name},${ip}`),
    ...Object.entries(zone.mx ?? {}).map(([name, host]) => `mx-host=${name},${host},10`),
    ...(zone.mxRecords ?? []).map((r) => `mx-host=${r.name},${r.exchange},${r.priority}`),
  ];
  return `${lines.join("\n")}\n`;
}

/** Runs dnsmasq on the config file `conf`; resolves once it answers on `port`. */
async function launch(conf: string, port: number): Promise<Subprocess> {
  const proc: Subprocess = spawn([DNSMASQ, "--keep-in-foreground", `--conf-file=${conf}`], {
    stdout: "ignore",
    stderr: "pipe",
  });
  // Ready once it accepts TCP on its port (it binds UDP first).
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (proc.exitCode !== null) {
      const err = await new Response(proc.stderr as ReadableStream).text();
      throw new Error(`dnsmasq exited (${proc.exitCode}): ${err}`);
    }
    const ok = await Bun.connect({
      hostname: "127.0.0.1",
      port,
      socket: { data() {}, open: (sock) => void sock.end() },
    }).then(
      () => true,
      () => false,
    );
    if (ok) return proc;
    if (Date.now() > deadline) {
      proc.kill();
      throw new Error("dnsmasq did not start listening in 10 s");
    }
    await Bun.sleep(20);
  }
}

/** Starts dnsmasq serving `zone` on 127.0.0.1; resolves once it answers. */
export async function startDnsmasq(zone: Zone): Promise<RunningDnsmasq> {
  if (!existsSync(DNSMASQ))
    throw new Error(`${DNSMASQ} is missing: apt-get install -y dnsmasq (.ci/run does)`);
  const dir = mkdtempSync(join(tmpdir(), "mailhook-dnsmasq-"));
  const port = await freePort();
  const conf = join(dir, "dnsmasq.conf");
  writeFileSync(conf, config(zone, port));
  let proc: Subprocess;
  try {
    proc = await launch(conf, port);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  let stopped = false;
  return {
    port,
    server: `127.0.0.1:${port}`,
    async update(next) {
      if (stopped) throw new Error("dnsmasq was stopped");
      proc.kill();
      await proc.exited;
      writeFileSync(conf, config(next, port));
      proc = await launch(conf, port);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      proc.kill();
      await proc.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
