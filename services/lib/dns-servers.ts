/**
 * `DNS_SERVERS`: a comma-separated list of `host[:port]` (an IPv6 address with a port as `[v6]:port`;
 * the port defaults to 53), or `none` for no lookups at all. Unset means the system's resolvers.
 */
import { isIP } from "node:net";

/** A DNS server to ask: an IP address and a port. */
export interface DnsServer {
  host: string;
  port: number;
}

/** One `host[:port]` entry, or the reason it is not one. */
export function parseDnsServer(entry: string): DnsServer | string {
  const text = entry.trim();
  let host = text;
  let portText: string | undefined;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (bracketed) {
    host = bracketed[1] ?? "";
    portText = bracketed[2];
  } else if (isIP(text) !== 6) {
    const colon = text.lastIndexOf(":");
    if (colon >= 0) {
      host = text.slice(0, colon);
      portText = text.slice(colon + 1);
    }
  }
  if (isIP(host) === 0) return `${JSON.stringify(text)} is not an IP address with an optional :port`;
  const port = portText === undefined ? 53 : Number(portText);
  if (!/^\d{1,5}$/.test(portText ?? "53") || port < 1 || port > 65535)
    return `${JSON.stringify(text)}: the port must be from 1 to 65535`;
  return { host, port };
}

/** The value of `DNS_SERVERS` (null when unset); a bad entry is added to `problems`. */
export function parseDnsServers(text: string | null, problems: string[]): DnsServer[] | null {
  if (text === null) return null;
  if (text.trim().toLowerCase() === "none") return [];
  const servers: DnsServer[] = [];
  for (const entry of text.split(",")) {
    const server = parseDnsServer(entry);
    if (typeof server === "string") problems.push(`DNS_SERVERS: ${server}`);
    else servers.push(server);
  }
  return servers;
}
