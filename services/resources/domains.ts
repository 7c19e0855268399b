/**
 * A project's own domains and addresses (docs/ingest.md, "Your own domains"). A domain is added
 * unverified, with a verification token of its own; `verifyDomain` looks up its MX records and the TXT
 * records of `_mailhook.<domain>` (domains-dns.ts, through `DNS_SERVERS`) and marks it verified when an
 * MX points at `INBOUND_DOMAIN`'s host name and a TXT record is `mailhook-verification=<token>`. The MX
 * proves mail reaches this service; the TXT proves which project the domain's owner meant, since every
 * customer's MX points at the same host.
 *
 * An unverified claim blocks nobody: several projects may add the same domain, and the first to verify
 * owns it. The others' verify then answers `domains.taken`, and so does adding a domain that another
 * project has verified. Mail is accepted only for verified domains, so only for the owner: at each
 * address added to it, and at any local part when the domain is catch-all.
 *
 * Addresses compare case-insensitively (the local part is stored lowercase) and a `+tag` suffix is
 * ignored when resolving: `sales+eu@example.com` reaches the owner of `sales@example.com`. The tag is
 * what follows the first `+` (kept as sent), so local parts of addresses may not contain `+`.
 */
import { domainToASCII } from "node:url";
import { type Static, Type } from "@sinclair/typebox";
import { and, asc, eq, ne } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import { addresses, type DomainCheck, domains } from "../db/schema/index.ts";
import { AppError } from "../lib/errors.ts";
import { newId, randomToken } from "../lib/ids.ts";
import { Timestamp } from "../lib/schema.ts";
import { DnsLookupError, resolveMx, resolveTxt } from "./domains-dns.ts";
import { projectByInboundAddress } from "./projects.ts";

const DomainCheckSchema = Type.Object({
  checked_at: Timestamp,
  ok: Type.Boolean(),
  found: Type.Array(Type.Object({ exchange: Type.String(), priority: Type.Integer() }), {
    description: "the MX records found, lowest priority first",
  }),
  found_txt: Type.Array(Type.String(), {
    description: "the TXT values found at `_mailhook.<domain>` (empty for a check that did not look)",
  }),
  problem: Type.Union([Type.String(), Type.Null()]),
});

/** One DNS record to set at the domain's DNS host. */
const DnsRecordSchema = Type.Object({
  type: Type.Union([Type.Literal("MX"), Type.Literal("TXT")]),
  name: Type.String(),
  value: Type.String({
    description: "MX: the host name to point at (any priority); TXT: the exact text of the record",
  }),
});

/**
 * A domain as the API shows it; `dns` lists the records to set for it to verify: the MX (mail reaches
 * this service) and the TXT record that proves this project's claim.
 */
export const DomainViewSchema = Type.Object({
  id: Type.String(),
  domain: Type.String(),
  catch_all: Type.Boolean(),
  verified: Type.Boolean(),
  verified_at: Type.Union([Timestamp, Type.Null()]),
  dns: Type.Array(DnsRecordSchema),
  last_check: Type.Union([DomainCheckSchema, Type.Null()]),
  created_at: Timestamp,
});
/** See {@link DomainViewSchema}. */
export type DomainView = Static<typeof DomainViewSchema>;

/** An address as the API shows it. */
export const AddressViewSchema = Type.Object({
  id: Type.String(),
  address: Type.String(),
  domain_id: Type.String(),
  created_at: Timestamp,
});
/** See {@link AddressViewSchema}. */
export type AddressView = Static<typeof AddressViewSchema>;

type DomainRow = typeof domains.$inferSelect;

/** The name whose TXT record proves ownership of `domain`. */
export const verificationName = (domain: string): string => `_mailhook.${domain}`;
/** The TXT value that proves the claim holding `token`. */
export const verificationValue = (token: string): string => `mailhook-verification=${token}`;

function domainView(ctx: AppContext, row: DomainRow): DomainView {
  return {
    id: row.id,
    domain: row.domain,
    catch_all: row.catchAll,
    verified: row.verified,
    verified_at: row.verifiedAt?.toISOString() ?? null,
    dns: [
      { type: "MX", name: row.domain, value: ctx.config.inboundDomain },
      {
        type: "TXT",
        name: verificationName(row.domain),
        value: verificationValue(row.verificationToken),
      },
    ],
    last_check: row.lastCheck ? { ...row.lastCheck, found_txt: row.lastCheck.found_txt ?? [] } : null,
    created_at: row.createdAt.toISOString(),
  };
}

const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** The domain in its stored form (lowercase ASCII, IDNs as punycode, no trailing dot), or the reason it is not one. */
export function normalizeDomain(text: string): { domain: string } | { problem: string } {
  const trimmed = text.trim().replace(/\.$/, "");
  const ascii = trimmed === "" ? "" : domainToASCII(trimmed.toLowerCase());
  if (ascii === "") return { problem: `${JSON.stringify(text)} is not a domain name` };
  const labels = ascii.split(".");
  if (ascii.length > 253 || labels.length < 2 || !labels.every((l) => LABEL.test(l)))
    return { problem: `${JSON.stringify(text)} is not a domain name (such as example.com)` };
  if (/^\d+$/.test(labels[labels.length - 1] ?? "")) return { problem: "an IP address is not a domain name" };
  return { domain: ascii };
}

/** The local part in its stored form (lowercase), or the reason it is not a usable one. */
function normalizeLocalPart(text: string): { local: string } | { problem: string } {
  const local = text.toLowerCase();
  if (local.length === 0 || local.length > 64)
    return { problem: "the local part must be 1 to 64 characters" };
  if (local.includes("+"))
    return {
      problem: "the local part may not contain + (what follows + is the tag, and any tag is accepted)",
    };
  if (!/^[a-z0-9!#$%&'*/=?^_`{|}~-]+(\.[a-z0-9!#$%&'*/=?^_`{|}~-]+)*$/.test(local))
    return {
      problem: `${JSON.stringify(text)} is not a plain local part (letters, digits, . and !#$%&'*/=?^_\`{|}~-)`,
    };
  return { local };
}

/** The `+tag` of an address: what follows the first `+` of the local part, as sent; null when there is none. */
export function addressTag(address: string): string | null {
  const at = address.lastIndexOf("@");
  const local = at < 0 ? address : address.slice(0, at);
  const plus = local.indexOf("+");
  if (plus < 0 || plus === local.length - 1) return null;
  return local.slice(plus + 1);
}

/** Tells the process's recipient caches that an address may have stopped existing. */
function recipientsChanged(ctx: AppContext): void {
  ctx.ingest.recipientChanges.bump();
}

async function domainRow(ctx: AppContext, projectId: string, id: string): Promise<DomainRow> {
  const [row] = await ctx.database.db
    .select()
    .from(domains)
    .where(and(eq(domains.id, id), eq(domains.projectId, projectId)));
  if (!row) throw new AppError("domains.not_found", "domain not found");
  return row;
}

export async function createDomain(
  ctx: AppContext,
  projectId: string,
  input: { domain: string; catch_all?: boolean },
): Promise<DomainView> {
  const normalized = normalizeDomain(input.domain);
  if ("problem" in normalized)
    throw new AppError("domains.invalid", normalized.problem, [
      { path: "/domain", message: normalized.problem },
    ]);
  const { domain } = normalized;
  const inbound = ctx.config.inboundDomain;
  if (domain === inbound || domain.endsWith(`.${inbound}`)) {
    const message = `${domain} is the service's own inbound domain (INBOUND_DOMAIN); add a domain of yours`;
    throw new AppError("domains.invalid", message, [{ path: "/domain", message }]);
  }
  const [owner] = await ctx.database.db
    .select({ projectId: domains.projectId })
    .from(domains)
    .where(and(eq(domains.domain, domain), eq(domains.verified, true)));
  if (owner && owner.projectId !== projectId) throw takenElsewhere(domain);
  // Unverified rows take no part in the verified-domain index: this conflicts only with the project's
  // own row for the domain.
  const [row] = await ctx.database.db
    .insert(domains)
    .values({
      id: newId("dom"),
      projectId,
      domain,
      catchAll: input.catch_all ?? false,
      verificationToken: randomToken(24),
      createdAt: ctx.clock.now(),
    })
    .onConflictDoNothing()
    .returning();
  if (!row)
    throw new AppError("domains.taken", `${domain} is already added to this project`, [
      { path: "/domain", message: "a project adds a domain once" },
    ]);
  return domainView(ctx, row);
}

export async function listDomains(ctx: AppContext, projectId: string): Promise<DomainView[]> {
  const rows = await ctx.database.db
    .select()
    .from(domains)
    .where(eq(domains.projectId, projectId))
    .orderBy(asc(domains.domain));
  return rows.map((r) => domainView(ctx, r));
}

export async function getDomain(ctx: AppContext, projectId: string, id: string): Promise<DomainView> {
  return domainView(ctx, await domainRow(ctx, projectId, id));
}

export async function updateDomain(
  ctx: AppContext,
  projectId: string,
  id: string,
  input: { catch_all?: boolean },
): Promise<DomainView> {
  const row = await domainRow(ctx, projectId, id);
  if (input.catch_all === undefined) return domainView(ctx, row);
  const [updated] = await ctx.database.db
    .update(domains)
    .set({ catchAll: input.catch_all })
    .where(eq(domains.id, row.id))
    .returning();
  if (!updated) throw new AppError("domains.not_found", "domain not found");
  if (!input.catch_all) recipientsChanged(ctx);
  return domainView(ctx, updated);
}

/** Deletes the domain and its addresses; mail to them is refused from then on. */
export async function deleteDomain(ctx: AppContext, projectId: string, id: string): Promise<void> {
  const deleted = await ctx.database.db
    .delete(domains)
    .where(and(eq(domains.id, id), eq(domains.projectId, projectId)))
    .returning({ id: domains.id });
  if (deleted.length === 0) throw new AppError("domains.not_found", "domain not found");
  recipientsChanged(ctx);
}

/** `domains.taken`: another project has verified `domain`. */
function takenElsewhere(domain: string): AppError {
  const message = `${domain} is already verified by another project`;
  return new AppError(
    "domains.taken",
    `${message}: a domain is owned by the project that verifies it first, and receives mail only there`,
    [{ path: "/domain", message }],
  );
}

/** True for a unique violation (SQLSTATE 23505), from postgres.js or PGlite, wrapped by Drizzle or not. */
function isUniqueViolation(err: unknown): boolean {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e.code === "23505") return true;
  }
  return false;
}

function describe(found: DomainCheck["found"]): string {
  return found.map((r) => `${r.exchange} (priority ${r.priority})`).join(", ");
}

/**
 * Checks the domain: is it verified by another project (`domains.taken`), does an MX record point at
 * `INBOUND_DOMAIN` (`domains.mx_mismatch`), and does `_mailhook.<domain>` have this claim's TXT record
 * (`domains.txt_missing`)? Records what was found either way; the domain is verified when all hold and
 * unverified otherwise. The refusal's message names every record still to set. When no resolver
 * answered (`domains.dns_failed`), `verified` is left as it was.
 */
export async function verifyDomain(ctx: AppContext, projectId: string, id: string): Promise<DomainView> {
  const row = await domainRow(ctx, projectId, id);
  const db = ctx.database.db;
  const checkedAt = ctx.clock.now();
  /** Records a check that did not pass; unverifies the domain when `unverify`. */
  const failed = async (check: Omit<DomainCheck, "checked_at" | "ok">, unverify: boolean) => {
    await db
      .update(domains)
      .set({
        ...(unverify ? { verified: false, verifiedAt: null } : {}),
        lastCheck: { checked_at: checkedAt.toISOString(), ok: false, ...check },
      })
      .where(eq(domains.id, row.id));
    if (unverify && row.verified) recipientsChanged(ctx);
  };
  const [owner] = await db
    .select({ id: domains.id })
    .from(domains)
    .where(and(eq(domains.domain, row.domain), eq(domains.verified, true), ne(domains.id, row.id)));
  if (owner) {
    const err = takenElsewhere(row.domain);
    await failed({ found: [], found_txt: [], problem: err.message }, true);
    throw err;
  }

  const expectedMx = ctx.config.inboundDomain;
  const txtName = verificationName(row.domain);
  const txtValue = verificationValue(row.verificationToken);
  // Both lookups at once; when both fail, the MX failure is the one reported.
  const [mx, txt] = await Promise.allSettled([resolveMx(ctx, row.domain), resolveTxt(ctx, txtName)]);
  const lookupError = [mx, txt].find((r) => r.status === "rejected")?.reason as unknown;
  if (mx.status === "rejected" || txt.status === "rejected") {
    if (!(lookupError instanceof DnsLookupError)) throw lookupError;
    const problem =
      lookupError.code === "EDISABLED"
        ? `${lookupError.message}: the domain cannot be verified on this installation`
        : `${lookupError.message}; nothing was changed, try again later`;
    await failed({ found: [], found_txt: [], problem }, false);
    throw new AppError("domains.dns_failed", problem);
  }
  const found = mx.value;
  const foundTxt = txt.value;
  const mxOk = found.some((r) => r.exchange === expectedMx);
  const txtOk = foundTxt.some((v) => v.trim() === txtValue);
  const mxProblem = mxOk
    ? null
    : found.length === 0
      ? `${row.domain} has no MX record; add one: ${row.domain} MX 10 ${expectedMx}`
      : `the MX of ${row.domain} points at ${describe(found)}, not at ${expectedMx}`;
  const txtProblem = txtOk
    ? null
    : foundTxt.length === 0
      ? `${txtName} has no TXT record; add one: ${txtName} TXT "${txtValue}"`
      : `no TXT record of ${txtName} is "${txtValue}" (found ${foundTxt.map((v) => JSON.stringify(v)).join(", ")}); add it: ${txtName} TXT "${txtValue}"`;
  if (mxProblem !== null || txtProblem !== null) {
    const problem = [mxProblem, txtProblem].filter((p) => p !== null).join("; ");
    await failed({ found, found_txt: foundTxt, problem }, true);
    throw new AppError(mxProblem !== null ? "domains.mx_mismatch" : "domains.txt_missing", problem, [
      ...found.map((r, i) => ({ path: `/mx/${i}`, message: `${r.exchange} (priority ${r.priority})` })),
      ...foundTxt.map((v, i) => ({ path: `/txt/${i}`, message: v })),
    ]);
  }
  let updated: DomainRow | undefined;
  try {
    [updated] = await db
      .update(domains)
      .set({
        verified: true,
        verifiedAt: row.verified && row.verifiedAt ? row.verifiedAt : checkedAt,
        lastCheck: {
          checked_at: checkedAt.toISOString(),
          ok: true,
          found,
          found_txt: foundTxt,
          problem: null,
        },
      })
      .where(eq(domains.id, row.id))
      .returning();
  } catch (err) {
    // Another project verified the domain since the check above (the verified-domain index).
    if (!isUniqueViolation(err)) throw err;
    const taken = takenElsewhere(row.domain);
    await failed({ found, found_txt: foundTxt, problem: taken.message }, true);
    throw taken;
  }
  if (!updated) throw new AppError("domains.not_found", "domain not found");
  return domainView(ctx, updated);
}

function addressView(row: {
  id: string;
  localPart: string;
  domain: string;
  domainId: string;
  createdAt: Date;
}) {
  return {
    id: row.id,
    address: `${row.localPart}@${row.domain}`,
    domain_id: row.domainId,
    created_at: row.createdAt.toISOString(),
  } satisfies AddressView;
}

const addressColumns = {
  id: addresses.id,
  localPart: addresses.localPart,
  domain: domains.domain,
  domainId: addresses.domainId,
  createdAt: addresses.createdAt,
};

/** Adds `local@domain` at a verified domain of the project. */
export async function createAddress(
  ctx: AppContext,
  projectId: string,
  input: { address: string },
): Promise<AddressView> {
  const invalid = (message: string) =>
    new AppError("addresses.invalid", message, [{ path: "/address", message }]);
  const text = input.address.trim();
  const at = text.lastIndexOf("@");
  if (at <= 0) throw invalid(`${JSON.stringify(input.address)} is not an address (local@domain)`);
  const local = normalizeLocalPart(text.slice(0, at));
  if ("problem" in local) throw invalid(local.problem);
  const domain = normalizeDomain(text.slice(at + 1));
  if ("problem" in domain) throw invalid(domain.problem);
  const [dom] = await ctx.database.db
    .select()
    .from(domains)
    .where(and(eq(domains.domain, domain.domain), eq(domains.projectId, projectId)));
  if (!dom?.verified) {
    const message = dom
      ? `${domain.domain} is not verified yet: set its MX and TXT records and verify it first`
      : `${domain.domain} is not a domain of this project: add it (POST /v1/domains) and verify it first`;
    throw new AppError("addresses.domain_not_verified", message, [{ path: "/address", message }]);
  }
  const [row] = await ctx.database.db
    .insert(addresses)
    .values({
      id: newId("adr"),
      projectId,
      domainId: dom.id,
      localPart: local.local,
      createdAt: ctx.clock.now(),
    })
    .onConflictDoNothing()
    .returning();
  if (!row) throw new AppError("addresses.taken", `${local.local}@${dom.domain} already exists`);
  return addressView({ ...row, domain: dom.domain });
}

export async function listAddresses(ctx: AppContext, projectId: string): Promise<AddressView[]> {
  const rows = await ctx.database.db
    .select(addressColumns)
    .from(addresses)
    .innerJoin(domains, eq(domains.id, addresses.domainId))
    .where(eq(addresses.projectId, projectId))
    .orderBy(asc(domains.domain), asc(addresses.localPart));
  return rows.map(addressView);
}

export async function getAddress(ctx: AppContext, projectId: string, id: string): Promise<AddressView> {
  const [row] = await ctx.database.db
    .select(addressColumns)
    .from(addresses)
    .innerJoin(domains, eq(domains.id, addresses.domainId))
    .where(and(eq(addresses.id, id), eq(addresses.projectId, projectId)));
  if (!row) throw new AppError("addresses.not_found", "address not found");
  return addressView(row);
}

/** Deletes the address; mail to it is refused from then on (unless its domain is catch-all). */
export async function deleteAddress(ctx: AppContext, projectId: string, id: string): Promise<void> {
  const deleted = await ctx.database.db
    .delete(addresses)
    .where(and(eq(addresses.id, id), eq(addresses.projectId, projectId)))
    .returning({ id: addresses.id });
  if (deleted.length === 0) throw new AppError("addresses.not_found", "address not found");
  recipientsChanged(ctx);
}

/**
 * The project owning an address at one of the projects' own verified domains: an address added to it
 * (its `+tag` ignored), or any local part of a catch-all domain. Null otherwise.
 */
export async function projectByOwnAddress(ctx: AppContext, address: string): Promise<{ id: string } | null> {
  const at = address.lastIndexOf("@");
  if (at <= 0) return null;
  // An internationalised domain (SMTPUTF8) is compared in its stored, punycode form.
  const normalized = normalizeDomain(address.slice(at + 1));
  if ("problem" in normalized) return null;
  const { domain } = normalized;
  const local = address.slice(0, at).toLowerCase().split("+")[0] ?? "";
  const [row] = await ctx.database.db
    .select({ projectId: domains.projectId, catchAll: domains.catchAll, addressId: addresses.id })
    .from(domains)
    .leftJoin(addresses, and(eq(addresses.domainId, domains.id), eq(addresses.localPart, local)))
    .where(and(eq(domains.domain, domain), eq(domains.verified, true)));
  if (!row || (!row.catchAll && row.addressId === null)) return null;
  return { id: row.projectId };
}

/**
 * The project an envelope recipient belongs to: its random inbound address (`token[+tag]@INBOUND_DOMAIN`)
 * or one of its own addresses. What the intake's recipient directory asks.
 */
export async function projectByRecipient(ctx: AppContext, address: string): Promise<{ id: string } | null> {
  return (await projectByInboundAddress(ctx, address)) ?? (await projectByOwnAddress(ctx, address));
}
