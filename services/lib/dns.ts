/**
 * The one DNS resolver of the service (docs/security.md, "Sender authentication"): every lookup the
 * service makes (SPF, DKIM, DMARC and ARC at SMTP intake, MX checks) goes through a {@link DnsResolver}
 * on the context, asking the servers of `DNS_SERVERS` (default: the system's, from /etc/resolv.conf).
 *
 * Why not `dns.promises.Resolver`: its TXT, MX and PTR answers carry no TTL, and a cache that ignores
 * the zone's TTL would keep a revoked DKIM key or a changed SPF record for as long as it likes. Packets
 * are encoded and decoded by dns-packet; the transport here is small on purpose:
 *
 * - UDP with EDNS0 (4096-byte payload), a new socket per query (a random source port from the kernel)
 *   and a random 16-bit id; an answer counts only when it comes from the server asked, with that id
 *   and that question (RFC 5452 §4). A truncated answer is asked again over TCP (RFC 7766).
 * - Each try waits `timeoutMs`; a timeout, SERVFAIL or REFUSED tries the next server, `tries` rounds
 *   in all; then the lookup fails with `ETIMEOUT` / `ESERVFAIL` / `EREFUSED`, which SPF, DKIM and
 *   DMARC report as `temperror`.
 * - Answers are cached for their smallest TTL (at most a day), names that do not exist or have no
 *   record of the type for the negative TTL of the zone's SOA (RFC 2308 §5, at most an hour).
 *   Failures are not cached. Concurrent lookups of one name and type share one query; different
 *   names never wait for each other.
 *
 * Results have the shapes of Node's `dns.promises.resolve` (TXT: `string[][]`, MX: `{exchange,
 * priority}[]`, A/AAAA/PTR/CNAME/NS: `string[]`) and errors its codes (`ENOTFOUND`, `ENODATA`, …), so
 * mailauth takes {@link DnsResolver.resolve} as its resolver unchanged.
 */
import { randomInt } from "node:crypto";
import { createSocket } from "node:dgram";
import { getServers } from "node:dns";
import { isIP, Socket } from "node:net";
import * as packet from "dns-packet";

/** A DNS server to ask: an IP address and a port. */
export interface DnsServer {
  host: string;
  port: number;
}

/** Record types the resolver answers, with the shape of Node's `dns.promises.resolve`. */
export type DnsRecordType = "A" | "AAAA" | "TXT" | "MX" | "PTR" | "CNAME" | "NS";

export type DnsAnswer = string[] | string[][] | { exchange: string; priority: number }[];

/** A lookup's failure, with Node's `dns` error codes. */
export class DnsError extends Error {
  override name = "DnsError";
  constructor(
    readonly code: "ENOTFOUND" | "ENODATA" | "ETIMEOUT" | "ESERVFAIL" | "EREFUSED" | "EBADRESP" | "EBADNAME",
    readonly hostname: string,
    readonly rrtype: string,
  ) {
    super(`query ${rrtype} ${hostname}: ${code}`);
  }
}

export interface DnsResolverOptions {
  /** servers to ask, in order; null → the system's (`dns.getServers()`) */
  servers?: readonly DnsServer[] | null;
  /** how long one try waits for an answer (default 1500 ms) */
  timeoutMs?: number;
  /** rounds over the servers (default 2) */
  tries?: number;
  /** entries kept at most (default 10,000) */
  maxEntries?: number;
  /** milliseconds since the epoch */
  now?: () => number;
}

const MAX_TTL_S = 86_400;
const MAX_NEGATIVE_TTL_S = 3_600;
/** When a negative answer has no SOA to take the TTL from (RFC 2308 §5 asks for one). */
const DEFAULT_NEGATIVE_TTL_S = 60;
const UDP_PAYLOAD = 4096;

type Outcome = { answer: DnsAnswer } | { error: DnsError };

/** A decoded answer; dns-packet sets `rcode` (NOERROR, NXDOMAIN, …), which its types leave out. */
type Response = packet.DecodedPacket & { rcode?: string };

/** The resolver; one per process, on the context (`ctx.dns`). */
export class DnsResolver {
  readonly servers: readonly DnsServer[];
  readonly #timeoutMs: number;
  readonly #tries: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  readonly #cache = new Map<string, { until: number; outcome: Outcome }>();
  readonly #inflight = new Map<string, Promise<Outcome>>();
  /** Queries sent to a server (cache misses; diagnostics and tests). */
  queries = 0;

  constructor(opts: DnsResolverOptions = {}) {
    this.servers = opts.servers ?? systemServers();
    this.#timeoutMs = opts.timeoutMs ?? 1500;
    this.#tries = opts.tries ?? 2;
    this.#maxEntries = opts.maxEntries ?? 10_000;
    this.#now = opts.now ?? Date.now;
    // Bound once, so that mailauth can be handed `resolver.resolve` as a plain function.
    this.resolve = this.resolve.bind(this);
  }

  /** The records of `name` of type `rrtype`; rejects with a {@link DnsError}. */
  async resolve(name: string, rrtype: string = "A"): Promise<DnsAnswer> {
    const type = rrtype.toUpperCase() as DnsRecordType;
    const host = name.replace(/\.$/, "").toLowerCase();
    if (!["A", "AAAA", "TXT", "MX", "PTR", "CNAME", "NS"].includes(type)) {
      throw new TypeError(`unsupported record type ${rrtype}`);
    }
    if (host === "" || host.length > 253 || host.split(".").some((l) => l.length === 0 || l.length > 63)) {
      throw new DnsError("EBADNAME", name, type);
    }
    const key = `${type} ${host}`;
    const hit = this.#cache.get(key);
    let outcome: Outcome;
    if (hit && hit.until > this.#now()) outcome = hit.outcome;
    else {
      let pending = this.#inflight.get(key);
      if (!pending) {
        pending = this.#lookup(host, type, key).finally(() => this.#inflight.delete(key));
        this.#inflight.set(key, pending);
      }
      outcome = await pending;
    }
    if ("error" in outcome) throw outcome.error;
    // Callers may sort or splice what they get; the cached answer stays as it was.
    return copyAnswer(outcome.answer);
  }

  /**
   * Until when (ms since the epoch) the cached answer to `name`/`rrtype` stays valid, or 0 when none is
   * cached: what a copy of the answer kept elsewhere (the authentication thread, auth-thread.ts) may
   * be reused for, so that it expires with this cache.
   */
  expiryOf(name: string, rrtype: string = "A"): number {
    const hit = this.#cache.get(`${rrtype.toUpperCase()} ${name.replace(/\.$/, "").toLowerCase()}`);
    return hit && hit.until > this.#now() ? hit.until : 0;
  }

  /** Forgets every cached answer. */
  clear(): void {
    this.#cache.clear();
  }

  async #lookup(host: string, type: DnsRecordType, key: string): Promise<Outcome> {
    let response: Response;
    try {
      response = await this.#ask(host, type);
    } catch (err) {
      return { error: err instanceof DnsError ? err : new DnsError("EBADRESP", host, type) };
    }
    const { outcome, ttl } = interpret(response, host, type);
    if (ttl > 0) {
      if (this.#cache.size >= this.#maxEntries) this.#evict();
      this.#cache.set(key, { until: this.#now() + ttl * 1000, outcome });
    }
    return outcome;
  }

  #evict(): void {
    const now = this.#now();
    for (const [k, v] of this.#cache) if (v.until <= now) this.#cache.delete(k);
    // Still full: drop the oldest tenth (insertion order).
    let drop = this.#cache.size >= this.#maxEntries ? Math.ceil(this.#maxEntries / 10) : 0;
    for (const k of this.#cache.keys()) {
      if (drop-- <= 0) break;
      this.#cache.delete(k);
    }
  }

  /** One answer from the first server that gives one (NOERROR or NXDOMAIN), over UDP then TCP if truncated. */
  async #ask(host: string, type: DnsRecordType): Promise<Response> {
    let last: DnsError = new DnsError("ETIMEOUT", host, type);
    if (this.servers.length === 0) throw new DnsError("EREFUSED", host, type);
    for (let round = 0; round < this.#tries; round++) {
      for (const server of this.servers) {
        this.queries++;
        let response = await queryUdp(server, host, type, this.#timeoutMs);
        if (response && (response.flags ?? 0) & packet.TRUNCATED_RESPONSE) {
          response = await queryTcp(server, host, type, this.#timeoutMs);
        }
        if (!response) continue;
        const rcode = response.rcode;
        if (rcode === "NOERROR" || rcode === "NXDOMAIN") return response;
        last = new DnsError(rcode === "REFUSED" ? "EREFUSED" : "ESERVFAIL", host, type);
      }
    }
    throw last;
  }
}

/** What an answer means for `host`/`type`, and how long it may be cached (seconds, 0: not at all). */
function interpret(response: Response, host: string, type: DnsRecordType): { outcome: Outcome; ttl: number } {
  const answers = (response.answers ?? []).filter(
    (a) => a.type === type && (a.class === undefined || a.class === "IN"),
  );
  if (response.rcode === "NOERROR" && answers.length > 0) {
    // The CNAMEs that led to the records count too: the answer is only as fresh as its oldest link.
    const chain = (response.answers ?? []).filter((a) => a.type === type || a.type === "CNAME");
    const ttl = Math.min(MAX_TTL_S, ...chain.map((a) => ("ttl" in a && a.ttl !== undefined ? a.ttl : 0)));
    return { outcome: { answer: shape(type, answers) }, ttl };
  }
  const soa = (response.authorities ?? []).find((a) => a.type === "SOA") as packet.SoaAnswer | undefined;
  const negativeTtl = soa
    ? Math.min(soa.ttl ?? 0, soa.data.minimum ?? DEFAULT_NEGATIVE_TTL_S, MAX_NEGATIVE_TTL_S)
    : DEFAULT_NEGATIVE_TTL_S;
  const code = response.rcode === "NXDOMAIN" ? "ENOTFOUND" : "ENODATA";
  return { outcome: { error: new DnsError(code, host, type) }, ttl: negativeTtl };
}

function shape(type: DnsRecordType, answers: packet.Answer[]): DnsAnswer {
  if (type === "TXT") {
    return answers.map((a) => {
      const data = (a as packet.TxtAnswer).data;
      const chunks = Array.isArray(data) ? data : [data];
      return chunks.map((c) => (typeof c === "string" ? c : Buffer.from(c).toString("utf8")));
    });
  }
  if (type === "MX") {
    return answers.map((a) => {
      const mx = (a as packet.MxAnswer).data;
      return { exchange: mx.exchange, priority: mx.preference ?? 0 };
    });
  }
  return answers.map((a) => String((a as packet.StringAnswer).data));
}

function query(host: string, type: DnsRecordType): { id: number; bytes: Buffer } {
  const id = randomInt(1, 65536);
  const bytes = packet.encode({
    type: "query",
    id,
    flags: packet.RECURSION_DESIRED,
    questions: [{ type, name: host, class: "IN" }],
    additionals: [
      {
        type: "OPT",
        name: ".",
        udpPayloadSize: UDP_PAYLOAD,
        extendedRcode: 0,
        ednsVersion: 0,
        flags: 0,
        flag_do: false,
        options: [],
      },
    ],
  });
  return { id, bytes };
}

/** Whether `response` answers the query `id` for `host`/`type` (RFC 5452 §4.3: id and question match). */
function answers(response: Response, id: number, host: string, type: DnsRecordType): boolean {
  const q = response.questions?.[0];
  return (
    response.type === "response" &&
    response.id === id &&
    q !== undefined &&
    q.type === type &&
    q.name.replace(/\.$/, "").toLowerCase() === host
  );
}

/** One UDP try; null on timeout or a socket error. */
function queryUdp(
  server: DnsServer,
  host: string,
  type: DnsRecordType,
  timeoutMs: number,
): Promise<Response | null> {
  const { id, bytes } = query(host, type);
  const socket = createSocket(isIP(server.host) === 6 ? "udp6" : "udp4");
  return new Promise((resolve) => {
    const done = (value: Response | null) => {
      clearTimeout(timer);
      socket.removeAllListeners("message");
      socket.close();
      resolve(value);
    };
    const timer = setTimeout(() => done(null), timeoutMs);
    socket.on("error", () => done(null));
    socket.on("message", (msg, rinfo) => {
      // Anything not from the server asked, or not the answer to this question, is ignored.
      if (rinfo.port !== server.port || !sameAddress(rinfo.address, server.host)) return;
      let response: Response;
      try {
        response = packet.decode(msg);
      } catch {
        return;
      }
      if (answers(response, id, host, type)) done(response);
    });
    socket.send(bytes, server.port, server.host, (err) => {
      if (err) done(null);
    });
  });
}

/** One TCP try (RFC 1035 §4.2.2: two-byte length prefix); null on timeout or a connection error. */
function queryTcp(
  server: DnsServer,
  host: string,
  type: DnsRecordType,
  timeoutMs: number,
): Promise<Response | null> {
  const { id, bytes } = query(host, type);
  return new Promise((resolve) => {
    const socket = new Socket();
    let buffered = Buffer.alloc(0);
    const done = (value: Response | null) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(value);
    };
    const timer = setTimeout(() => done(null), timeoutMs);
    socket.on("error", () => done(null));
    socket.on("close", () => done(null));
    socket.on("data", (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (buffered.length < 2) return;
      const length = buffered.readUInt16BE(0);
      if (buffered.length < 2 + length) return;
      try {
        const response = packet.decode(buffered.subarray(2, 2 + length));
        done(answers(response, id, host, type) ? response : null);
      } catch {
        done(null);
      }
    });
    socket.connect(server.port, server.host, () => {
      const prefix = Buffer.alloc(2);
      prefix.writeUInt16BE(bytes.length);
      socket.write(Buffer.concat([prefix, bytes]));
    });
  });
}

function sameAddress(a: string, b: string): boolean {
  const norm = (s: string) => s.toLowerCase().replace(/^::ffff:/, "");
  return norm(a) === norm(b);
}

/**
 * Parses one `host[:port]` server: an IPv4 address, a bracketed IPv6 address (`[::1]:5353`) or a bare
 * IPv6 address, port 53 by default. A resolver is named by address (a name would need a resolver
 * first). Returns an error text for a bad entry.
 */
export function parseDnsServer(text: string): DnsServer | string {
  const t = text.trim();
  let host = t;
  let port = "53";
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(t);
  if (bracketed) {
    host = bracketed[1] as string;
    port = bracketed[2] ?? "53";
    if (isIP(host) !== 6) return `${JSON.stringify(t)} is not an IPv6 address`;
  } else if (isIP(t) === 6) {
    host = t;
  } else {
    const m = /^([^:]+)(?::(\d+))?$/.exec(t);
    if (!m || isIP(m[1] as string) !== 4)
      return `${JSON.stringify(t)} is not an IP address with an optional :port`;
    host = m[1] as string;
    port = m[2] ?? "53";
  }
  const n = Number(port);
  if (!/^\d+$/.test(port) || n < 1 || n > 65535) return `${JSON.stringify(t)}: port must be 1 to 65535`;
  return { host, port: n };
}

/** The system's servers (`/etc/resolv.conf`, as Node reads it). */
function systemServers(): DnsServer[] {
  return getServers()
    .map(parseDnsServer)
    .filter((s): s is DnsServer => typeof s !== "string");
}

/**
 * A copy of an answer whose arrays and records are its own (the strings are immutable): what
 * `structuredClone` gives, for a fraction of its cost on the authentication's hot path.
 */
function copyAnswer(answer: DnsAnswer): DnsAnswer {
  return (answer as unknown[]).map((r) =>
    Array.isArray(r) ? r.slice() : typeof r === "object" && r !== null ? { ...r } : r,
  ) as DnsAnswer;
}
