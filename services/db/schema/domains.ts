import { sql } from "drizzle-orm";
import { boolean, index, jsonb, pgTable, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";
import { projects } from "./projects.ts";

/** What the last check of a domain found (resources/domains.ts, `verifyDomain`). */
export interface DomainCheck {
  /** RFC 3339 */
  checked_at: string;
  ok: boolean;
  /** the MX records found, lowest priority first (empty when there are none or the lookup failed) */
  found: { exchange: string; priority: number }[];
  /**
   * the TXT values found at `_mailhook.<domain>`, sorted (empty when there are none or the lookup was
   * not made); absent from checks made before ownership was checked
   */
  found_txt?: string[];
  /** why the check did not pass, in words; null when it passed */
  problem: string | null;
}

/**
 * A project's own receiving domain; `domain` is lowercase. Several projects may claim the same domain
 * while it is unverified, and each claim has its own `verificationToken`. The first to verify owns it:
 * its MX points at `INBOUND_DOMAIN`'s host name and `_mailhook.<domain>` has the TXT record
 * `mailhook-verification=<token>` of that claim. At most one row per domain is verified (a partial
 * unique index), and mail for the domain is accepted only for that row's project.
 */
export const domains = pgTable(
  "domains",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    domain: text("domain").notNull(),
    catchAll: boolean("catch_all").notNull().default(false),
    /** proves which project owns the domain: the `_mailhook.<domain>` TXT value is `mailhook-verification=<token>` */
    verificationToken: text("verification_token").notNull(),
    verified: boolean("verified").notNull().default(false),
    verifiedAt: timestamp("verified_at", { withTimezone: true, precision: 3 }),
    lastCheck: jsonb("last_check").$type<DomainCheck>(),
    createdAt: timestamp("created_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("domains_project_domain_key").on(t.projectId, t.domain),
    uniqueIndex("domains_verified_domain_key").on(t.domain).where(sql`${t.verified}`),
  ],
);

/** One receiving address (`local_part@domain`) at a project's domain; `local_part` is lowercase, without `+`. */
export const addresses = pgTable(
  "addresses",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    domainId: text("domain_id")
      .notNull()
      .references(() => domains.id, { onDelete: "cascade" }),
    localPart: text("local_part").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("addresses_domain_local_key").on(t.domainId, t.localPart),
    index("addresses_project_idx").on(t.projectId),
  ],
);
