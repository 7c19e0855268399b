import { describe, expect, test } from "bun:test";
import type { SMTPServerSession } from "smtp-server";
import { loadConfig } from "../../../services/config.ts";
import {
  ConnectionGuard,
  clientKey,
  DATA_GRACE_MS,
  DATA_MIN_BYTES_PER_SECOND,
  type GuardedConnection,
  type SmtpLimits,
  smtpLimits,
} from "../../../services/ingest/smtp-limits.ts";
import { silentLogger } from "../../../services/lib/logger.ts";

describe("clientKey", () => {
  test.each([
    ["127.0.0.1", "127.0.0.1"],
    ["::ffff:127.0.0.1", "127.0.0.1"],
    ["::FFFF:127.0.0.1", "127.0.0.1"],
    ["::ffff:7f00:1", "127.0.0.1"],
    ["0:0:0:0:0:ffff:7f00:1", "127.0.0.1"],
    ["0000:0000:0000:0000:0000:ffff:c000:0201", "192.0.2.1"],
    ["2001:DB8:0:0:0:0:0:1", "2001:db8::1"],
    ["fe80::1%eth0", "fe80::1"],
    ["::1", "::1"],
    // SIIT (::ffff:0:0/96) is not IPv4-mapped: a different address.
    ["::ffff:0:7f00:1", "::ffff:0:7f00:1"],
  ])("%s counts as %s", (address, key) => {
    expect(clientKey(address)).toBe(key);
  });
});

const limits: SmtpLimits = {
  maxConnectionsPerIp: 3,
  maxRecipients: 100,
  idleTimeoutMs: 60_000,
  sessionTimeoutMs: 60_000,
  dataGraceMs: 60_000,
  dataMinBytesPerSecond: 1024,
};
const session = (remoteAddress: string) => ({ remoteAddress }) as SMTPServerSession;
const conn = (): GuardedConnection & { sent: string[] } => {
  const sent: string[] = [];
  return { sent, send: (code, data) => sent.push(`${code} ${data}`), close: () => undefined };
};

describe("ConnectionGuard", () => {
  test("an IPv4-mapped IPv6 client and its IPv4 address share one count", () => {
    const guard = new ConnectionGuard(limits, "in.test", silentLogger);
    const held = [session("::ffff:10.0.0.1"), session("10.0.0.1"), session("::ffff:a00:1")];
    expect(held.map((s) => guard.admit(s, conn()))).toEqual([true, true, true]);
    expect(guard.admit(session("10.0.0.1"), conn())).toBe(false);
    expect(guard.admit(session("::ffff:10.0.0.1"), conn())).toBe(false);
    expect(guard.admit(session("10.0.0.2"), conn())).toBe(true);
    expect(guard.refusal()).toMatch(/^4\.7\.0 in\.test /);
    for (const s of held) guard.release(s);
  });

  test("releasing a session frees its slot, once; a refused session releases nothing", () => {
    const guard = new ConnectionGuard(limits, "in.test", silentLogger);
    const held = [1, 2, 3].map(() => session("192.0.2.7"));
    for (const s of held) guard.admit(s, conn());
    const refused = session("192.0.2.7");
    expect(guard.admit(refused, conn())).toBe(false);
    guard.release(refused);
    expect(guard.connectionsOf("192.0.2.7")).toBe(3);
    guard.release(held[0]!);
    guard.release(held[0]!);
    expect(guard.connectionsOf("::ffff:192.0.2.7")).toBe(2);
    expect(guard.admit(session("192.0.2.7"), conn())).toBe(true);
    for (const s of held) guard.release(s);
  });

  test("a session whose deadline passes during DATA is closed after the DATA's reply", async () => {
    const guard = new ConnectionGuard({ ...limits, sessionTimeoutMs: 1 }, "in.test", silentLogger);
    const s = session("192.0.2.9");
    const c = conn();
    guard.admit(s, c);
    const stream = Object.assign(
      (async function* () {
        // The session deadline passes while the message is arriving.
        await Bun.sleep(20);
        yield new Uint8Array(10);
      })(),
      { destroy: () => undefined },
    );
    for await (const _ of guard.receive(s, stream)) expect(c.sent).toEqual([]);
    expect(c.sent).toEqual([]);
    guard.replied(s);
    expect(c.sent).toEqual([expect.stringMatching(/^421 4\.4\.2 in\.test /)]);
    guard.release(s);
  });
});

describe("ConnectionGuard DATA deadline", () => {
  // A stream whose next chunk comes after the DATA deadline (1 ms of grace) has passed.
  const lateStream = (writableEnded: boolean) => {
    const destroyed: Error[] = [];
    const chunks = (async function* () {
      yield new Uint8Array(10);
      await Bun.sleep(20);
      yield new Uint8Array(10);
    })();
    return Object.assign(chunks, {
      writableEnded,
      destroyed,
      destroy: (err?: Error) => void destroyed.push(err!),
    });
  };
  const dataLimits = { ...limits, dataGraceMs: 1, dataMinBytesPerSecond: 1_000_000_000 };

  test("a transfer behind its deadline is answered 421 4.4.2 and its stream destroyed", async () => {
    const guard = new ConnectionGuard(dataLimits, "in.test", silentLogger);
    const s = session("192.0.2.10");
    const c = conn();
    guard.admit(s, c);
    const stream = lateStream(false);
    for await (const _ of guard.receive(s, stream));
    expect(c.sent).toEqual([expect.stringMatching(/^421 4\.4\.2 in\.test .*DATA/)]);
    expect(stream.destroyed.map((e) => e.name)).toEqual(["DataTimeoutError"]);
    guard.release(s);
  });

  test("a message whose terminating dot has arrived is never cut, however long reading it takes", async () => {
    const guard = new ConnectionGuard(dataLimits, "in.test", silentLogger);
    const s = session("192.0.2.11");
    const c = conn();
    guard.admit(s, c);
    const stream = lateStream(true);
    let bytes = 0;
    for await (const chunk of guard.receive(s, stream)) bytes += chunk.byteLength;
    expect(bytes).toBe(20);
    expect(c.sent).toEqual([]);
    expect(stream.destroyed).toEqual([]);
    guard.release(s);
  });
});

describe("smtpLimits", () => {
  test("defaults: 10 connections per address, 100 recipients, 10 min session, 60 s + 32 KiB/s DATA", () => {
    const l = smtpLimits(loadConfig({}));
    expect(l).toMatchObject({ maxConnectionsPerIp: 10, maxRecipients: 100, sessionTimeoutMs: 600_000 });
    expect([l.dataGraceMs, l.dataMinBytesPerSecond]).toEqual([DATA_GRACE_MS, DATA_MIN_BYTES_PER_SECOND]);
  });

  test("the idle timeout, the DATA grace and the DATA minimum rate come from the configuration", () => {
    const l = smtpLimits(
      loadConfig({
        SMTP_IDLE_TIMEOUT_S: "30",
        SMTP_DATA_TIMEOUT_S: "120",
        SMTP_DATA_MIN_BYTES_PER_S: "8192",
      }),
    );
    expect(l).toMatchObject({ idleTimeoutMs: 30_000, dataGraceMs: 120_000, dataMinBytesPerSecond: 8192 });
    expect(smtpLimits(loadConfig({})).idleTimeoutMs).toBe(60_000);
  });

  test("a 50 MiB message at 1 Mbit/s stays inside the DATA deadline all the way", () => {
    const rate = 1_000_000 / 8;
    const size = 50 * 1024 * 1024;
    const seconds = size / rate;
    // deadline(t) = grace + bytes(t) / min rate grows faster than t whenever rate > min rate.
    expect(rate).toBeGreaterThan(DATA_MIN_BYTES_PER_SECOND);
    expect(DATA_GRACE_MS / 1000 + size / DATA_MIN_BYTES_PER_SECOND).toBeGreaterThan(seconds);
  });

  test.each([
    ["SMTP_MAX_CONNECTIONS_PER_IP", "0"],
    ["SMTP_MAX_RECIPIENTS", "-1"],
    ["SMTP_SESSION_TIMEOUT_S", "ten"],
    ["SMTP_IDLE_TIMEOUT_S", "0"],
    ["SMTP_DATA_TIMEOUT_S", "1h"],
    ["SMTP_DATA_MIN_BYTES_PER_S", "0"],
    ["API_MAX_JSON_BYTES", "12"],
  ])("%s=%s stops start-up naming the variable", (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(name);
  });
});
