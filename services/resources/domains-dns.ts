/**
 * The lookups behind domain verification (resources/domains.ts): the domain's MX records and the TXT
 * records of its `_mailhook.` name, asking the resolvers of `DNS_SERVERS` (the system's when unset)
 * through `node:dns/promises`. The first try waits {@link MX_TIMEOUT_MS} and the second twice that
 * (c-ares backs off), so a silent resolver is reported as failed after about 4.5 seconds.
 */
import { Resolver } from "node:dns/promises";
import type { AppContext } from "../context.ts";

export const MX_TIMEOUT_MS = 1500;

/** An MX record; `exchange` lowercase, without a trailing dot. */
export interface MxRecord {
  exchange: string;
  priority: number;
}

/** A lookup that got no usable answer (timeout, SERVFAIL, refused, lookups off): nothing is known. */
export class DnsLookupError extends Error {
  override name = "DnsLookupError";
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** A resolver asking `DNS_SERVERS`; throws {@link DnsLookupError} `EDISABLED` when lookups are off. */
function resolver(ctx: AppContext): Resolver {
  const servers = ctx.config.dnsServers;
  if (servers !== null && servers.length === 0)
    throw new DnsLookupError("EDISABLED", "DNS lookups are turned off (DNS_SERVERS=none)");
  const r = new Resolver({ timeout: MX_TIMEOUT_MS, tries: 2 });
  if (servers !== null)
    r.setServers(
      servers.map((s) => (s.host.includes(":") ? `[${s.host}]:${s.port}` : `${s.host}:${s.port}`)),
    );
  return r;
}

/** Runs one lookup: a name that does not exist or has no such record is `empty`; no answer rejects. */
async function lookup<T>(
  ctx: AppContext,
  what: string,
  name: string,
  run: (r: Resolver) => Promise<T>,
  empty: T,
): Promise<T> {
  const r = resolver(ctx);
  try {
    return await run(r);
  } catch (err) {
    const code = (err as { code?: string }).code ?? "EUNKNOWN";
    if (code === "ENOTFOUND" || code === "ENODATA") return empty;
    throw new DnsLookupError(code, `the ${what} lookup of ${name} failed (${code})`);
  } finally {
    r.cancel();
  }
}

/**
 * The MX records of `domain`, lowest priority first; `[]` when the name does not exist or has no MX.
 * Rejects with {@link DnsLookupError} when no resolver answered.
 */
export async function resolveMx(ctx: AppContext, domain: string): Promise<MxRecord[]> {
  const records = await lookup(ctx, "MX", domain, (r) => r.resolveMx(domain), []);
  return records
    .map((r) => ({ exchange: r.exchange.toLowerCase().replace(/\.$/, ""), priority: r.priority }))
    .sort((a, b) => a.priority - b.priority || (a.exchange < b.exchange ? -1 : 1));
}

/**
 * The TXT values of `name` (each record's strings joined, as RFC 7208 reads them), sorted; `[]` when
 * the name does not exist or has no TXT record. Rejects with {@link DnsLookupError} when no resolver
 * answered.
 */
export async function resolveTxt(ctx: AppContext, name: string): Promise<string[]> {
  const records = await lookup(ctx, "TXT", name, (r) => r.resolveTxt(name), []);
  return records.map((chunks) => chunks.join("")).sort();
}
