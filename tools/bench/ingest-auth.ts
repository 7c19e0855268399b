/**
 * The `auth` part of the ingest benchmark (tools/bench/ingest.ts --parts auth): what sender
 * authentication (SPF, DKIM, DMARC, ARC at SMTP intake) costs a running server with a warm DNS cache.
 * Two servers on Postgres run side by side: one authenticates every message through a dnsmasq on
 * loopback serving the sender's zone, the other has authentication off (its intake's verdict is a
 * constant, `BENCH_AUTH=off`). Every message is DKIM-signed by good.test, comes from 127.0.0.1, which
 * good.test's SPF record allows, with a DMARC p=reject record: the full path, passing.
 *
 * Printed: SMTP 2 KB msg/s over 8 connections with authentication on and off (rounds alternate, to
 * spread the machine's noise over both: `BENCH_AUTH_ROUNDS`, default 4; before each round every server
 * and PostgreSQL are left to finish their background work, such as search indexing of the previous
 * round's messages, so that it does not run during another server's round; both servers run the search
 * indexer, as the smtp role does) and their ratio (target ≥ 0.8), and with authentication on a
 * thread of its own instead of the main one (`SENDER_AUTH_THREAD=true`); and the latency of the reply
 * to the end of DATA for one connection sending one message at a time, p50/p99 on and off, and what
 * authentication adds to the p99 (target < 20 ms); `BENCH_AUTH_LATENCY=off` skips it.
 */
import { generateKeyPairSync } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { dkimSign } from "mailauth";
import { startDnsmasq } from "../../test/support/dnsmasq.ts";
import { RawSmtp } from "../../test/support/smtp.ts";

interface BenchServer {
  pid: number;
  smtp: number;
  stop(): Promise<void>;
}

export interface AuthBenchDeps {
  startServer(env: Record<string, string>): Promise<BenchServer>;
  setupProject(server: BenchServer): Promise<{ inbound: string }>;
}

let seq = 0;

/** A signer of 2 KB messages from alice@good.test: one DKIM signature over the fields that do not change. */
async function signedMessages(privateKey: string) {
  const line = "The quick brown fox jumps over the lazy dog, again and again and again.\r\n";
  const head = [
    "From: Alice <alice@good.test>",
    "To: bench@in.localhost",
    "Subject: bench",
    "Date: Mon, 06 May 2024 07:08:09 +0000",
    "MIME-Version: 1.0",
    "Content-Type: text/plain",
  ];
  const body = line.repeat(Math.ceil(2048 / line.length));
  const template = `${head.join("\r\n")}\r\n\r\n${body}`;
  const key = {
    signingDomain: "good.test",
    selector: "s1",
    privateKey,
    headerList: ["from", "to", "subject", "date"],
  };
  const signed = await dkimSign(template, { ...key, signatureData: [key] });
  if (signed.errors.length > 0) throw new Error(JSON.stringify(signed.errors));
  // The Message-ID is not signed, so each message gets its own and the signature still verifies.
  return () => `${signed.signatures}Message-ID: <auth.${process.pid}.${++seq}@good.test>\r\n${template}`;
}

async function throughput(port: number, inbound: string, next: () => string, total: number, conns: number) {
  let sent = 0;
  const worker = async () => {
    const c = await RawSmtp.connect(port);
    await c.command("EHLO mail.good.test");
    while (sent < total) {
      sent++;
      await c.write(`MAIL FROM:<alice@good.test>\r\nRCPT TO:<${inbound}>\r\nDATA\r\n`);
      const replies = [await c.reply(), await c.reply(), await c.reply()];
      if (replies[2]?.code !== 354) throw new Error(`DATA refused: ${replies.map((r) => r.raw).join(" | ")}`);
      await c.write(`${next()}.\r\n`);
      const done = await c.reply(60_000);
      if (done.code !== 250) throw new Error(`message refused: ${done.raw}`);
    }
    await c.quit();
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: conns }, worker));
  return total / ((performance.now() - t0) / 1000);
}

/** An SMTP connection that sends one message at a time and times the reply to the end of its DATA. */
async function timedSender(port: number, inbound: string) {
  const c = await RawSmtp.connect(port);
  await c.command("EHLO mail.good.test");
  return {
    async send(msg: string): Promise<number> {
      await c.write(`MAIL FROM:<alice@good.test>\r\nRCPT TO:<${inbound}>\r\nDATA\r\n`);
      await c.reply();
      await c.reply();
      await c.reply();
      const t0 = performance.now();
      await c.write(`${msg}.\r\n`);
      const done = await c.reply(60_000);
      if (done.code !== 250) throw new Error(`message refused: ${done.raw}`);
      return performance.now() - t0;
    },
    quit: () => c.quit(),
  };
}

/** CPU seconds a process has used (/proc/<pid>/stat, clock ticks of 10 ms). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** The pids of the machine's PostgreSQL processes (the server's own and its backends). */
function postgresPids(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, "utf8").trim() === "postgres") pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** CPU seconds of `pids` that still exist. */
function cpuOf(pids: number[]): number[] {
  return pids.map((pid) => {
    try {
      return cpuSeconds(pid);
    } catch {
      return 0;
    }
  });
}

/**
 * Waits until none of `pids`, nor PostgreSQL (whose backends run a server's background statements,
 * such as search indexing, while the server itself waits), used more than 10 ms of CPU in the last
 * 250 ms (at most 10 s).
 */
async function settle(pids: number[]): Promise<void> {
  const until = Date.now() + 10_000;
  const all = [...pids, ...postgresPids()];
  let last = cpuOf(all);
  while (Date.now() < until) {
    await Bun.sleep(250);
    const now = cpuOf(all);
    const busy = now.some((c, i) => c - (last[i] ?? 0) > 0.01);
    last = now;
    if (!busy) return;
  }
}

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;

/** Runs the part and prints its lines: up to 2,000 messages per throughput round, BENCH_AUTH_ROUNDS each. */
export async function authBench(deps: AuthBenchDeps, messages: number, conns: number): Promise<void> {
  const small = Math.min(messages, 2000);
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const p = publicKey.export({ type: "spki", format: "der" }).toString("base64");
  const dns = await startDnsmasq({
    domains: ["test"],
    txt: {
      "good.test": "v=spf1 ip4:127.0.0.1 -all",
      "_dmarc.good.test": "v=DMARC1; p=reject",
      "s1._domainkey.good.test": `v=DKIM1; k=rsa; p=${p}`,
    },
    ttl: 3600,
  });
  const next = await signedMessages(privateKey.export({ type: "pkcs8", format: "pem" }).toString());
  const on = await deps.startServer({ DNS_SERVERS: dns.server, BENCH_AUTH: "on" });
  const off = await deps.startServer({ BENCH_AUTH: "off" });
  // The same, evaluating on a thread of its own (SENDER_AUTH_THREAD=true): what the thread buys.
  const inp = await deps.startServer({
    DNS_SERVERS: dns.server,
    BENCH_AUTH: "on",
    SENDER_AUTH_THREAD: "true",
  });
  try {
    const [onP, offP, inpP] = [
      await deps.setupProject(on),
      await deps.setupProject(off),
      await deps.setupProject(inp),
    ];
    // Warm-up: compiled hot paths, and the zone's answers in the server's DNS cache (BENCH_AUTH_WARMUP
    // messages per server, default 1500).
    const warmup = Number(process.env.BENCH_AUTH_WARMUP ?? 1500);
    for (const [s, pr] of [
      [on, onP],
      [off, offP],
      [inp, inpP],
    ] as const)
      await throughput(s.smtp, pr.inbound, next, warmup, conns);
    const rates = { on: [] as number[], off: [] as number[], inp: [] as number[] };
    const cpu = { on: 0, off: 0, inp: 0 };
    const rounds = Math.max(1, Number(process.env.BENCH_AUTH_ROUNDS ?? 4));
    for (let round = 0; round < rounds; round++) {
      // Alternate which of on and off goes first.
      const order = [
        ["off", off, offP],
        ["on", on, onP],
      ] as const;
      for (const [name, server, project] of [
        ...(round % 2 === 0 ? order : [...order].reverse()),
        ["inp", inp, inpP] as const,
      ]) {
        await settle([on.pid, off.pid, inp.pid]);
        const cpu0 = cpuSeconds(server.pid);
        rates[name].push(await throughput(server.smtp, project.inbound, next, small, conns));
        cpu[name] += cpuSeconds(server.pid) - cpu0;
      }
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const [rOn, rOff] = [mean(rates.on), mean(rates.off)];
    const perMsg = (s: number) => ((s / (rounds * small)) * 1000).toFixed(2);
    console.log(
      `postgres SMTP 2 KB authentication off ${rOff.toFixed(1)} msg/s (server CPU ${perMsg(cpu.off)} ms/msg)`,
    );
    console.log(
      `postgres SMTP 2 KB authentication on  ${rOn.toFixed(1)} msg/s (server CPU ${perMsg(cpu.on)} ms/msg; warm DNS cache)`,
    );
    console.log(`postgres SMTP 2 KB authentication on ÷ off = ${(rOn / rOff).toFixed(2)}`);
    const rInp = mean(rates.inp);
    console.log(
      `postgres SMTP 2 KB authentication on its own thread ${rInp.toFixed(1)} msg/s (server CPU ${perMsg(cpu.inp)} ms/msg; SENDER_AUTH_THREAD=true), ÷ off = ${(rInp / rOff).toFixed(2)}`,
    );
    if (process.env.BENCH_AUTH_LATENCY === "off") return;
    // One message at a time to each server in turn, so that both see the same machine.
    const count = Math.max(300, Math.floor(small / 4));
    const [sOn, sOff] = [await timedSender(on.smtp, onP.inbound), await timedSender(off.smtp, offP.inbound)];
    const lat = { on: [] as number[], off: [] as number[] };
    for (let i = 0; i < count; i++) {
      lat.off.push(await sOff.send(next()));
      lat.on.push(await sOn.send(next()));
    }
    await sOn.quit();
    await sOff.quit();
    const [latOn, latOff] = [lat.on.sort((a, b) => a - b), lat.off.sort((a, b) => a - b)];
    console.log(
      `postgres DATA reply latency, one connection: off p50 ${pct(latOff, 0.5).toFixed(2)} ms p99 ${pct(latOff, 0.99).toFixed(2)} ms; on p50 ${pct(latOn, 0.5).toFixed(2)} ms p99 ${pct(latOn, 0.99).toFixed(2)} ms`,
    );
    console.log(
      `postgres DATA p99 added by authentication (warm) ${(pct(latOn, 0.99) - pct(latOff, 0.99)).toFixed(2)} ms`,
    );
  } finally {
    await on.stop();
    await off.stop();
    await inp.stop();
    await dns.stop();
  }
}
