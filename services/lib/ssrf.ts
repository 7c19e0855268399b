/**
 * SSRF guard for webhook delivery (docs/delivery.md).
 *
 * The guard judges the exact IP that will be dialled: a hostname is resolved once, every address is
 * checked, and the caller connects to the returned address (see delivery/dispatch.ts), so a DNS answer that
 * changes between check and connect (rebinding) cannot slip through. Checking every address, not
 * just the chosen one, refuses names that mix a public and a private record.
 */
import { lookup as dnsLookup } from "node:dns/promises";
import { isIP, isIPv4 } from "node:net";

/** One resolved address. */
export interface LookupAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a hostname to all of its addresses; injectable so tests can fake DNS answers. */
export type Lookup = (hostname: string) => Promise<LookupAddress[]>;

/** Why an address is refused. */
export type BlockReason =
  | "unspecified"
  | "loopback"
  | "private"
  | "link_local"
  | "cgnat"
  | "multicast"
  | "metadata"
  | "reserved"
  | "invalid";

/** The system resolver (getaddrinfo via node:dns), all addresses in the resolver's order. */
export const systemLookup: Lookup = async (hostname) => {
  const answers = await dnsLookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

/** One blocked range: every address whose first `bits` bits equal `prefix`'s. */
export type Rule = readonly [prefix: string, bits: number, reason: BlockReason];
type CompiledRule = readonly [prefix: Uint8Array, bits: number, reason: BlockReason];

/**
 * The blocked IPv4 ranges. Order matters: the first matching rule names the reason (metadata before
 * link-local / CGNAT / public).
 */
export const V4_RULES: readonly Rule[] = [
  ["169.254.169.254", 32, "metadata"], // AWS, GCP, Azure, OpenStack instance metadata
  ["100.100.100.200", 32, "metadata"], // Alibaba Cloud metadata
  ["168.63.129.16", 32, "metadata"], // Azure WireServer (host agent, DNS, DHCP): a public address
  ["0.0.0.0", 8, "unspecified"], // "this network" (RFC 1122 §3.2.1.3); 0.0.0.0 dials loopback on Linux
  ["10.0.0.0", 8, "private"], // RFC 1918
  ["100.64.0.0", 10, "cgnat"], // RFC 6598 shared address space
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link_local"], // RFC 3927
  ["172.16.0.0", 12, "private"], // RFC 1918
  ["192.0.0.0", 24, "reserved"], // RFC 6890 IETF protocol assignments
  ["192.168.0.0", 16, "private"], // RFC 1918
  ["198.18.0.0", 15, "reserved"], // RFC 2544 benchmarking, used inside some networks
  ["224.0.0.0", 4, "multicast"],
  ["240.0.0.0", 4, "reserved"], // incl. 255.255.255.255 broadcast
];

/** The blocked IPv6 ranges, judged before any embedded IPv4 address; first match names the reason. */
export const V6_RULES: readonly Rule[] = [
  ["fd00:ec2::254", 128, "metadata"], // AWS IMDS over IPv6
  ["::", 128, "unspecified"],
  ["::1", 128, "loopback"],
  ["100::", 64, "reserved"], // RFC 6666 discard-only
  ["64:ff9b:1::", 48, "private"], // RFC 8215 local-use NAT64
  ["2001::", 32, "reserved"], // Teredo: hides an IPv4 address we cannot judge
  ["fc00::", 7, "private"], // RFC 4193 unique local
  ["fe80::", 10, "link_local"],
  ["fec0::", 10, "private"], // deprecated site-local (RFC 3879)
  ["ff00::", 8, "multicast"],
];

/** An IPv6 range whose addresses carry an IPv4 address in bytes `at`..`at + 3`. */
export interface Ipv4Embedding {
  name: string;
  prefix: string;
  bits: number;
  at: number;
}

/**
 * The IPv6 forms that carry an IPv4 address; such an address is judged by that IPv4 address, since a
 * host stack (mapped, compatible) or a translator on the path (SIIT, NAT64, 6to4) delivers it there.
 */
export const IPV4_EMBEDDINGS: readonly Ipv4Embedding[] = [
  { name: "IPv4-mapped (RFC 4291 §2.5.5.2)", prefix: "::ffff:0:0", bits: 96, at: 12 },
  { name: "IPv4-translated, SIIT (RFC 7915 §1.3, RFC 2765)", prefix: "::ffff:0:0:0", bits: 96, at: 12 },
  { name: "IPv4-compatible, deprecated (RFC 4291 §2.5.5.1)", prefix: "::", bits: 96, at: 12 },
  { name: "NAT64 well-known prefix (RFC 6052)", prefix: "64:ff9b::", bits: 96, at: 12 },
  { name: "6to4 (RFC 3056)", prefix: "2002::", bits: 16, at: 2 },
];

const V4 = compileRules(V4_RULES);
const V6 = compileRules(V6_RULES);
const EMBEDDINGS = IPV4_EMBEDDINGS.map((e) => ({ prefix: parseIp(e.prefix)!, bits: e.bits, at: e.at }));

/**
 * Why `address` (an IPv4 or IPv6 literal, optionally with an IPv6 zone) must not be dialled, or
 * `null` if it is a public address. IPv6 forms that carry an IPv4 address ({@link IPV4_EMBEDDINGS}:
 * mapped `::ffff:a.b.c.d`, SIIT `::ffff:0:a.b.c.d`, compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`
 * and 6to4 `2002::/16`) are judged by that IPv4 address.
 */
export function blockedReason(address: string): BlockReason | null {
  const bytes = parseIp(address);
  if (!bytes) return "invalid";
  if (bytes.length === 4) return matchRules(bytes, V4);
  const direct = matchRules(bytes, V6);
  if (direct) return direct;
  const embedded = embeddedIPv4(bytes);
  return embedded ? matchRules(embedded, V4) : null;
}

/** Outcome of {@link resolveTarget}. */
export type ResolveResult =
  | { ok: true; address: LookupAddress; all: LookupAddress[] }
  | { ok: false; networkError: string; blockedAddress?: string };

/**
 * Resolves `hostname` once (IP literals are not looked up; IPv6 may come in URL brackets), refuses
 * if any answer is blocked (unless `allowPrivate`), and picks the address to dial: the first IPv4
 * answer, else the first answer. Refusals read `ssrf_blocked:<address>`; resolver failures
 * `dns_error: <code> <hostname>`.
 */
export async function resolveTarget(
  hostname: string,
  options: { allowPrivate: boolean; lookup?: Lookup },
): Promise<ResolveResult> {
  const host = hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
  let all: LookupAddress[];
  const literal = isIP(host);
  if (literal !== 0) {
    all = [{ address: host, family: literal === 6 ? 6 : 4 }];
  } else {
    try {
      all = await (options.lookup ?? systemLookup)(host);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      return {
        ok: false,
        networkError: `dns_error: ${typeof code === "string" ? code : "lookup failed"} ${host}`,
      };
    }
    if (all.length === 0) return { ok: false, networkError: `dns_error: no addresses ${host}` };
  }
  for (const a of all) {
    const reason = blockedReason(a.address);
    // An unparseable answer is refused even with allowPrivate: we could not dial it safely anyway.
    if (reason === "invalid" || (reason !== null && !options.allowPrivate)) {
      return { ok: false, networkError: `ssrf_blocked:${a.address}`, blockedAddress: a.address };
    }
  }
  const chosen = all.find((a) => a.family === 4) ?? all[0]!;
  return { ok: true, address: chosen, all };
}

function compileRules(rules: readonly Rule[]): CompiledRule[] {
  return rules.map(([prefix, bits, reason]) => [parseIp(prefix)!, bits, reason] as const);
}

function matchRules(bytes: Uint8Array, rules: readonly CompiledRule[]): BlockReason | null {
  for (const [prefix, bits, reason] of rules) {
    if (prefix.length === bytes.length && prefixMatches(bytes, prefix, bits)) return reason;
  }
  return null;
}

function prefixMatches(a: Uint8Array, b: Uint8Array, bits: number): boolean {
  const whole = bits >> 3;
  for (let i = 0; i < whole; i++) if (a[i] !== b[i]) return false;
  const rest = bits & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return ((a[whole] ?? 0) & mask) === ((b[whole] ?? 0) & mask);
}

function embeddedIPv4(b: Uint8Array): Uint8Array | null {
  const form = EMBEDDINGS.find((e) => prefixMatches(b, e.prefix, e.bits));
  return form ? b.subarray(form.at, form.at + 4) : null;
}

/** Parses an IP literal into 4 or 16 bytes; `null` if it is not one. */
export function parseIp(address: string): Uint8Array | null {
  const zone = address.indexOf("%");
  const ip = zone >= 0 ? address.slice(0, zone) : address;
  if (isIPv4(ip)) return Uint8Array.from(ip.split(".").map(Number));
  if (isIP(ip) !== 6) return null;
  let text = ip.toLowerCase();
  const tail = text.slice(text.lastIndexOf(":") + 1);
  if (tail.includes(".")) {
    const [a = 0, b = 0, c = 0, d = 0] = tail.split(".").map(Number);
    text = `${text.slice(0, text.length - tail.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = "", rest] = text.split("::");
  const headGroups = head === "" ? [] : head.split(":");
  const restGroups = rest === undefined || rest === "" ? [] : rest.split(":");
  const fill = rest === undefined ? 0 : 8 - headGroups.length - restGroups.length;
  const groups = [...headGroups, ...Array<string>(fill).fill("0"), ...restGroups];
  if (groups.length !== 8) return null;
  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    const n = Number.parseInt(g, 16);
    out[2 * i] = n >> 8;
    out[2 * i + 1] = n & 0xff;
  });
  return out;
}
