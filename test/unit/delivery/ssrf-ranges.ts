/**
 * Every range the SSRF guard (services/lib/ssrf.ts) blocks, for test/unit/delivery/ssrf.test.ts:
 * addresses inside each (its first and last, and any worth naming) and just outside it, with the
 * reason the neighbour has (null when it is public), and how each IPv6 form that carries an IPv4
 * address writes one. Written by hand from the RFCs, not derived from the guard's own tables.
 */
import type { BlockReason } from "../../../services/lib/ssrf.ts";

export interface Row {
  range: string;
  reason: BlockReason;
  inside: string[];
  outside: [address: string, reason: BlockReason | null][];
}

export const V4_TABLE: Row[] = [
  {
    range: "169.254.169.254/32",
    reason: "metadata",
    inside: ["169.254.169.254"],
    outside: [
      ["169.254.169.253", "link_local"],
      ["169.254.169.255", "link_local"],
    ],
  },
  {
    range: "100.100.100.200/32",
    reason: "metadata",
    inside: ["100.100.100.200"],
    outside: [
      ["100.100.100.199", "cgnat"],
      ["100.100.100.201", "cgnat"],
    ],
  },
  {
    range: "168.63.129.16/32",
    reason: "metadata",
    inside: ["168.63.129.16"],
    outside: [
      ["168.63.129.15", null],
      ["168.63.129.17", null],
    ],
  },
  {
    range: "0.0.0.0/8",
    reason: "unspecified",
    inside: ["0.0.0.0", "0.1.2.3", "0.255.255.255"],
    outside: [["1.0.0.0", null]],
  },
  {
    range: "10.0.0.0/8",
    reason: "private",
    inside: ["10.0.0.0", "10.1.2.3", "10.255.255.255"],
    outside: [
      ["9.255.255.255", null],
      ["11.0.0.0", null],
    ],
  },
  {
    range: "100.64.0.0/10",
    reason: "cgnat",
    inside: ["100.64.0.0", "100.127.255.255"],
    outside: [
      ["100.63.255.255", null],
      ["100.128.0.0", null],
    ],
  },
  {
    range: "127.0.0.0/8",
    reason: "loopback",
    inside: ["127.0.0.0", "127.0.0.1", "127.255.0.9", "127.255.255.255"],
    outside: [
      ["126.255.255.255", null],
      ["128.0.0.0", null],
    ],
  },
  {
    range: "169.254.0.0/16",
    reason: "link_local",
    inside: ["169.254.0.0", "169.254.1.1", "169.254.255.255"],
    outside: [
      ["169.253.255.255", null],
      ["169.255.0.0", null],
    ],
  },
  {
    range: "172.16.0.0/12",
    reason: "private",
    inside: ["172.16.0.0", "172.31.255.255"],
    outside: [
      ["172.15.255.255", null],
      ["172.32.0.0", null],
    ],
  },
  {
    range: "192.0.0.0/24",
    reason: "reserved",
    inside: ["192.0.0.0", "192.0.0.170", "192.0.0.192", "192.0.0.255"],
    outside: [
      ["191.255.255.255", null],
      ["192.0.1.0", null],
    ],
  },
  {
    range: "192.168.0.0/16",
    reason: "private",
    inside: ["192.168.0.0", "192.168.1.1", "192.168.255.255"],
    outside: [
      ["192.167.255.255", null],
      ["192.169.0.0", null],
    ],
  },
  {
    range: "198.18.0.0/15",
    reason: "reserved",
    inside: ["198.18.0.0", "198.19.255.255"],
    outside: [
      ["198.17.255.255", null],
      ["198.20.0.0", null],
    ],
  },
  {
    range: "224.0.0.0/4",
    reason: "multicast",
    inside: ["224.0.0.0", "224.0.0.1", "239.255.255.250", "239.255.255.255"],
    outside: [
      ["223.255.255.255", null],
      ["240.0.0.0", "reserved"],
    ],
  },
  {
    range: "240.0.0.0/4",
    reason: "reserved",
    inside: ["240.0.0.0", "255.255.255.255"],
    outside: [["239.255.255.255", "multicast"]],
  },
];

export const V6_TABLE: Row[] = [
  {
    range: "fd00:ec2::254/128",
    reason: "metadata",
    inside: ["fd00:ec2::254"],
    outside: [
      ["fd00:ec2::253", "private"],
      ["fd00:ec2::255", "private"],
    ],
  },
  {
    range: "::/128",
    reason: "unspecified",
    inside: ["::", "0:0:0:0:0:0:0:0"],
    outside: [["::1", "loopback"]],
  },
  // The neighbours of :: and ::1 are IPv4-compatible forms of 0.0.0.x: "this network".
  { range: "::1/128", reason: "loopback", inside: ["::1"], outside: [["::2", "unspecified"]] },
  {
    range: "100::/64",
    reason: "reserved",
    inside: ["100::", "100::ffff:ffff:ffff:ffff"],
    outside: [
      ["ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", null],
      ["100:0:0:1::", null],
    ],
  },
  {
    range: "64:ff9b:1::/48",
    reason: "private",
    inside: ["64:ff9b:1::", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff"],
    outside: [
      ["64:ff9b:0:ffff:ffff:ffff:ffff:ffff", null],
      ["64:ff9b:2::", null],
    ],
  },
  {
    range: "2001::/32",
    reason: "reserved",
    inside: ["2001::", "2001:0:4136:e378::1", "2001:0:ffff:ffff:ffff:ffff:ffff:ffff"],
    outside: [
      ["2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", null],
      ["2001:1::", null],
    ],
  },
  {
    range: "fc00::/7",
    reason: "private",
    inside: ["fc00::", "fc00::1", "fd12:3456::1", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"],
    outside: [
      ["fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", null],
      ["fe00::", null],
    ],
  },
  {
    range: "fe80::/10",
    reason: "link_local",
    inside: ["fe80::", "fe80::1", "fe80::1%eth0", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff"],
    outside: [
      ["fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", null],
      ["fec0::", "private"],
    ],
  },
  {
    range: "fec0::/10",
    reason: "private",
    inside: ["fec0::", "fec0::1", "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"],
    outside: [
      ["febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "link_local"],
      ["ff00::", "multicast"],
    ],
  },
  {
    range: "ff00::/8",
    reason: "multicast",
    inside: ["ff00::", "ff02::1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"],
    outside: [["feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "private"]],
  },
];

/**
 * Each IPv6 form that carries an IPv4 address: how to write an IPv4 address in it, and addresses just
 * outside the form that carry 127.0.0.1 in the same place yet must not be judged by it.
 */
export const EMBEDDING_TABLE: { range: string; embed: (v4: string) => string; outside: string[] }[] = [
  {
    range: "::ffff:0:0/96",
    embed: (v4) => `::ffff:${v4}`,
    outside: ["::fffe:7f00:1", "::1:ffff:7f00:1"],
  },
  {
    range: "::ffff:0:0:0/96",
    embed: (v4) => `::ffff:0:${v4}`,
    outside: ["::fffe:0:7f00:1", "::ffff:1:7f00:1", "::1:ffff:0:7f00:1"],
  },
  { range: "::/96", embed: (v4) => `::${v4}`, outside: ["::1:7f00:1", "1::7f00:1"] },
  {
    range: "64:ff9b::/96",
    embed: (v4) => `64:ff9b::${v4}`,
    outside: ["64:ff9b::1:7f00:1", "64:ff9a:ffff:ffff:ffff:ffff:7f00:1", "64:ff9c::7f00:1"],
  },
  {
    range: "2002::/16",
    embed: (v4) => {
      const [a = 0, b = 0, c = 0, d = 0] = v4.split(".").map(Number);
      return `2002:${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}::1`;
    },
    outside: ["2003:7f00:1::1", "2001:ffff:7f00:1::1"],
  },
];
