/**
 * A real DNS server on loopback for tests: Debian's dnsmasq in the foreground (`-k`), answering only the
 * MX records it is given (`--mx-host`) and NXDOMAIN for any other name under the zones it is told are
 * local. No upstream, no /etc/hosts, no system configuration read. Missing dnsmasq fails with how to
 * install it (.ci/run does).
 */

import { createSocket } from "node:dgram";
import { Resolver } from "node:dns/promises";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eventually } from "./eventually.ts";

export const DNSMASQ = "/usr/sbin/dnsmasq";

export interface MxEntry {
  name: string;
  exchange: string;
  priority?: number;
}

export interface RunningDnsmasq {
  /** `127.0.0.1:<port>`, a `DNS_SERVERS` value */
  server: string;
  port: number;
  stop(): Promise<void>;
}

/** A UDP port free right now on 127.0.0.1. */
export async function freeUdpPort(): Promise<number> {
  const socket = createSocket("udp4");
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  const { port } = socket.address();
  await new Promise<void>((resolve) => socket.close(() => resolve()));
  return port;
}

/** Starts dnsmasq with the MX records `mx`; names under `localZones` without a record are NXDOMAIN. */
export async function startDnsmasq(mx: MxEntry[], localZones: string[] = ["test"]): Promise<RunningDnsmasq> {
  if (!existsSync(DNSMASQ))
    throw new Error(`${DNSMASQ} is missing: apt-get install -y dnsmasq (.ci/run does)`);
  const dir = mkdtempSync(join(tmpdir(), "mailhook-dnsmasq-"));
  const port = await freeUdpPort();
  const proc = Bun.spawn(
    [
      DNSMASQ,
      "-k",
      `--port=${port}`,
      "--listen-address=127.0.0.1",
      "--bind-interfaces",
      "--no-resolv",
      "--no-hosts",
      "--no-poll",
      `--conf-file=/dev/null`,
      `--pid-file=${join(dir, "dnsmasq.pid")}`,
      "--log-facility=-",
      ...localZones.map((z) => `--local=/${z}/`),
      ...mx.map((r) => `--mx-host=${r.name},${r.exchange},${r.priority ?? 10}`),
    ],
    { stdout: "ignore", stderr: "pipe" },
  );
  const stop = async () => {
    proc.kill();
    await proc.exited;
    rmSync(dir, { recursive: true, force: true });
  };
  // Ready once it answers: ask for a name it knows (or, with none, one it refuses as not existing).
  const probe = new Resolver({ timeout: 200, tries: 1 });
  probe.setServers([`127.0.0.1:${port}`]);
  try {
    await eventually(
      `dnsmasq answering on 127.0.0.1:${port}`,
      async () => {
        if (proc.exitCode !== null) throw new Error(`dnsmasq exited (${proc.exitCode})`);
        try {
          await probe.resolveMx(mx[0]?.name ?? `ready.${localZones[0] ?? "test"}`);
          return true;
        } catch (err) {
          return (err as { code?: string }).code === "ENOTFOUND";
        }
      },
      10_000,
      { everyMs: 25 },
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { server: `127.0.0.1:${port}`, port, stop };
}
