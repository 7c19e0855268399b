/**
 * The MX lookup behind domain verification (resources/domains.ts), asking the resolvers of
 * `DNS_SERVERS` (the system's when unset) through `node:dns/promises`. The first try waits
 * {@link MX_TIMEOUT_MS} and the second twice that (c-ares backs off), so a silent resolver is reported
 * as failed after about 4.5 seconds.
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
export class MxLookupError extends Error {
  override name = "MxLookupError";
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The MX records of `domain`, lowest priority first; `[]` when the name does not exist or has no MX.
 * Rejects with {@link MxLookupError} when no resolver answered.
 */
export async function resolveMx(ctx: AppContext, domain: string): Promise<MxRecord[]> {
  const servers = ctx.config.dnsServers;
  if (servers !== null && servers.length === 0)
    throw new MxLookupError("EDISABLED", "DNS lookups are turned off (DNS_SERVERS=none)");
  const resolver = new Resolver({ timeout: MX_TIMEOUT_MS, tries: 2 });
  if (servers !== null)
    resolver.setServers(
      servers.map((s) => (s.host.includes(":") ? `[${s.host}]:${s.port}` : `${s.host}:${s.port}`)),
    );
  try {
    const records = await resolver.resolveMx(domain);
    return records
      .map((r) => ({ exchange: r.exchange.toLowerCase().replace(/\.$/, ""), priority: r.priority }))
      .sort((a, b) => a.priority - b.priority || (a.exchange < b.exchange ? -1 : 1));
  } catch (err) {
    const code = (err as { code?: string }).code ?? "EUNKNOWN";
    if (code === "ENOTFOUND" || code === "ENODATA") return [];
    throw new MxLookupError(code, `the MX lookup of ${domain} failed (${code})`);
  } finally {
    resolver.cancel();
  }
}
