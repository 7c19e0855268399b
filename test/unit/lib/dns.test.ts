// The resolver (services/lib/dns.ts) against a DNS server on loopback written here with dns-packet, so
// that a test decides each answer: its TTL, a truncated UDP answer, one that never comes, a forged one.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createSocket, type Socket as UdpSocket } from "node:dgram";
import { createServer, type Server } from "node:net";
import * as packet from "dns-packet";
import { loadConfig } from "../../../services/config.ts";
import { DnsResolver, parseDnsServer } from "../../../services/lib/dns.ts";

type Handler = (q: packet.Question) => {
  answers?: packet.Answer[];
  rcode?: string;
  tc?: boolean;
  never?: boolean;
  soaTtl?: number;
};

/** Zone of the fake server: name → how to answer. Queries are counted per name. */
const asked = new Map<string, number>();
let handler: Handler = () => ({ rcode: "NXDOMAIN" });

function respond(query: packet.DecodedPacket, overTcp: boolean): Buffer | null {
  const q = query.questions?.[0];
  if (!q) return null;
  asked.set(
    `${q.type} ${q.name}${overTcp ? " tcp" : ""}`,
    (asked.get(`${q.type} ${q.name}${overTcp ? " tcp" : ""}`) ?? 0) + 1,
  );
  const r = handler(q);
  if (r.never) return null;
  const truncated = r.tc && !overTcp;
  const authorities: packet.Answer[] =
    r.soaTtl !== undefined
      ? [
          {
            type: "SOA",
            name: "example.test",
            ttl: r.soaTtl,
            data: {
              mname: "ns.example.test",
              rname: "h.example.test",
              serial: 1,
              refresh: 60,
              retry: 60,
              expire: 60,
              minimum: r.soaTtl,
            },
          },
        ]
      : [];
  return packet.encode({
    type: "response",
    id: query.id,
    flags: packet.RECURSION_AVAILABLE | (truncated ? packet.TRUNCATED_RESPONSE : 0) | rcodeBits(r.rcode),
    questions: [q],
    answers: truncated ? [] : (r.answers ?? []),
    authorities,
  });
}

function rcodeBits(rcode = "NOERROR"): number {
  return { NOERROR: 0, SERVFAIL: 2, NXDOMAIN: 3, REFUSED: 5 }[rcode] ?? 0;
}

let udp: UdpSocket;
let tcp: Server;
let port = 0;

beforeAll(async () => {
  tcp = createServer((sock) => {
    let buf = Buffer.alloc(0);
    sock.on("data", (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      if (buf.length < 2 || buf.length < 2 + buf.readUInt16BE(0)) return;
      const out = respond(packet.decode(buf.subarray(2, 2 + buf.readUInt16BE(0))), true);
      if (!out) return;
      const len = Buffer.alloc(2);
      len.writeUInt16BE(out.length);
      sock.end(Buffer.concat([len, out]));
    });
  });
  await new Promise<void>((resolve) => tcp.listen(0, "127.0.0.1", resolve));
  port = (tcp.address() as { port: number }).port;
  udp = createSocket("udp4");
  udp.on("message", (msg, rinfo) => {
    const out = respond(packet.decode(msg), false);
    if (out) udp.send(out, rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => udp.bind(port, "127.0.0.1", resolve));
});
afterAll(() => {
  udp?.close();
  tcp?.close();
});

function resolver(opts: { now?: () => number; timeoutMs?: number } = {}): DnsResolver {
  return new DnsResolver({
    servers: [{ host: "127.0.0.1", port }],
    timeoutMs: opts.timeoutMs ?? 500,
    tries: 1,
    ...opts,
  });
}

const txt = (name: string, text: string | string[], ttl = 300): packet.Answer => ({
  type: "TXT",
  name,
  ttl,
  data: text,
});

describe("DnsResolver", () => {
  test("answers in the shapes of Node's dns.promises.resolve: TXT chunks, MX, A", async () => {
    handler = (q) => {
      if (q.type === "TXT") return { answers: [txt(q.name, ["v=spf1 ", "-all"])] };
      if (q.type === "MX")
        return {
          answers: [
            { type: "MX", name: q.name, ttl: 60, data: { preference: 10, exchange: "mx.example.test" } },
          ],
        };
      return { answers: [{ type: "A", name: q.name, ttl: 60, data: "127.0.0.7" }] };
    };
    const r = resolver();
    expect(await r.resolve("shapes.example.test", "TXT")).toEqual([["v=spf1 ", "-all"]]);
    expect(await r.resolve("shapes.example.test", "MX")).toEqual([
      { exchange: "mx.example.test", priority: 10 },
    ]);
    expect(await r.resolve("shapes.example.test", "A")).toEqual(["127.0.0.7"]);
  });

  test("NXDOMAIN is ENOTFOUND, a name without records of the type ENODATA, SERVFAIL ESERVFAIL", async () => {
    handler = (q) =>
      q.name.startsWith("gone")
        ? { rcode: "NXDOMAIN", soaTtl: 30 }
        : q.name.startsWith("broken")
          ? { rcode: "SERVFAIL" }
          : { answers: [], soaTtl: 30 };
    const r = resolver();
    await expect(r.resolve("gone.example.test", "TXT")).rejects.toMatchObject({ code: "ENOTFOUND" });
    await expect(r.resolve("empty.example.test", "TXT")).rejects.toMatchObject({ code: "ENODATA" });
    await expect(r.resolve("broken.example.test", "TXT")).rejects.toMatchObject({ code: "ESERVFAIL" });
  });

  test("keeps an answer for its TTL and a negative answer for the SOA's, then asks again", async () => {
    let now = 1_000_000;
    handler = (q) =>
      q.name.startsWith("neg") ? { rcode: "NXDOMAIN", soaTtl: 5 } : { answers: [txt(q.name, "x", 60)] };
    const r = resolver({ now: () => now });
    await r.resolve("ttl.example.test", "TXT");
    await r.resolve("ttl.example.test", "TXT");
    expect(asked.get("TXT ttl.example.test")).toBe(1);
    now += 59_000;
    await r.resolve("ttl.example.test", "TXT");
    expect(asked.get("TXT ttl.example.test")).toBe(1);
    now += 2_000;
    await r.resolve("ttl.example.test", "TXT");
    expect(asked.get("TXT ttl.example.test")).toBe(2);

    await expect(r.resolve("neg.example.test", "TXT")).rejects.toMatchObject({ code: "ENOTFOUND" });
    await expect(r.resolve("neg.example.test", "TXT")).rejects.toMatchObject({ code: "ENOTFOUND" });
    expect(asked.get("TXT neg.example.test")).toBe(1);
    now += 6_000;
    await expect(r.resolve("neg.example.test", "TXT")).rejects.toMatchObject({ code: "ENOTFOUND" });
    expect(asked.get("TXT neg.example.test")).toBe(2);
  });

  test("a TTL of 0 is not cached; a caller changing its answer does not change the cache", async () => {
    handler = (q) => ({ answers: [txt(q.name, "zero", q.name.startsWith("zero") ? 0 : 300)] });
    const r = resolver();
    await r.resolve("zero.example.test", "TXT");
    await r.resolve("zero.example.test", "TXT");
    expect(asked.get("TXT zero.example.test")).toBe(2);
    const first = (await r.resolve("keep.example.test", "TXT")) as string[][];
    first.pop();
    expect(await r.resolve("keep.example.test", "TXT")).toEqual([["zero"]]);
  });

  test("concurrent lookups of one name share a query; a slow name never holds up another", async () => {
    handler = (q) => (q.name.startsWith("slow") ? { never: true } : { answers: [txt(q.name, "ok")] });
    const r = resolver({ timeoutMs: 400 });
    const order: string[] = [];
    const slow = r.resolve("slow.example.test", "TXT").catch((e) => {
      order.push("slow");
      return e;
    });
    const fast = await Promise.all(
      [1, 2, 3].map(() =>
        r.resolve("fast.example.test", "TXT").then((a) => {
          order.push("fast");
          return a;
        }),
      ),
    );
    expect(fast).toEqual([[["ok"]], [["ok"]], [["ok"]]]);
    expect(asked.get("TXT fast.example.test")).toBe(1);
    expect(await slow).toMatchObject({ code: "ETIMEOUT" });
    expect(order).toEqual(["fast", "fast", "fast", "slow"]);
  });

  test("a truncated UDP answer is asked again over TCP", async () => {
    const big = "p=".padEnd(1200, "A");
    handler = (q) => ({
      tc: true,
      answers: [txt(q.name, big.match(/.{1,255}/g) as string[])],
    });
    const r = resolver();
    const answer = (await r.resolve("big.example.test", "TXT")) as string[][];
    expect(answer[0]!.join("")).toBe(big);
    expect(asked.get("TXT big.example.test tcp")).toBe(1);
  });

  test("an answer from another address, or to another question, is ignored (then the lookup times out)", async () => {
    // A second server socket answers for the real one, from the wrong port.
    const spoofer = createSocket("udp4");
    await new Promise<void>((resolve) => spoofer.bind(0, "127.0.0.1", resolve));
    handler = () => ({ never: true });
    const captured: Array<{ msg: Buffer; port: number }> = [];
    const onMessage = (msg: Buffer, rinfo: { port: number }) => captured.push({ msg, port: rinfo.port });
    udp.on("message", onMessage);
    const r = resolver({ timeoutMs: 600 });
    const pending = r.resolve("spoofed.example.test", "TXT");
    while (captured.length === 0) await Bun.sleep(5);
    const q = packet.decode(captured[0]!.msg);
    const forged = packet.encode({
      type: "response",
      id: q.id,
      flags: packet.RECURSION_AVAILABLE,
      questions: q.questions,
      answers: [txt("spoofed.example.test", "v=spf1 +all")],
    });
    spoofer.send(forged, captured[0]!.port, "127.0.0.1");
    await expect(pending).rejects.toMatchObject({ code: "ETIMEOUT" });
    udp.off("message", onMessage);
    spoofer.close();
  });

  test("with no servers (DNS_SERVERS=none) every lookup fails at once with EREFUSED", async () => {
    const r = new DnsResolver({ servers: [] });
    await expect(r.resolve("example.test", "TXT")).rejects.toMatchObject({ code: "EREFUSED" });
    expect(r.queries).toBe(0);
  });
});

describe("DNS_SERVERS", () => {
  test.each([
    ["127.0.0.1", { host: "127.0.0.1", port: 53 }],
    ["127.0.0.1:5353", { host: "127.0.0.1", port: 5353 }],
    ["::1", { host: "::1", port: 53 }],
    ["[::1]:5353", { host: "::1", port: 5353 }],
  ])("%s is a server", (text, server) => {
    expect(parseDnsServer(text)).toEqual(server);
  });

  test.each(["dns.example.com", "127.0.0.1:0", "127.0.0.1:70000", "[127.0.0.1]:53", "1.2.3", ""])(
    "%p is refused",
    (text) => {
      expect(typeof parseDnsServer(text)).toBe("string");
    },
  );

  test("loads a list, none, or the default; a bad entry stops start-up naming the variable", () => {
    expect(loadConfig({ DNS_SERVERS: "127.0.0.1:5353, [::1]" }).dnsServers).toEqual([
      { host: "127.0.0.1", port: 5353 },
      { host: "::1", port: 53 },
    ]);
    expect(loadConfig({ DNS_SERVERS: "none" }).dnsServers).toEqual([]);
    expect(loadConfig({}).dnsServers).toBeNull();
    expect(() => loadConfig({ DNS_SERVERS: "127.0.0.1,resolver.local" })).toThrow(
      /DNS_SERVERS: "resolver\.local"/,
    );
  });

  test("TRUSTED_AUTHSERV_IDS is a lowercased list; RSPAMD_URL an http(s) URL", () => {
    expect(
      loadConfig({ TRUSTED_AUTHSERV_IDS: " MX.Example.com ,mx2.example.com" }).trustedAuthservIds,
    ).toEqual(["mx.example.com", "mx2.example.com"]);
    expect(loadConfig({}).trustedAuthservIds).toEqual([]);
    expect(() => loadConfig({ TRUSTED_AUTHSERV_IDS: "mx example" })).toThrow(/TRUSTED_AUTHSERV_IDS/);
    expect(loadConfig({ RSPAMD_URL: "http://127.0.0.1:11333/" }).rspamdUrl).toBe("http://127.0.0.1:11333");
    expect(loadConfig({}).rspamdUrl).toBeNull();
    expect(() => loadConfig({ RSPAMD_URL: "ftp://x" })).toThrow(/RSPAMD_URL/);
  });
});
