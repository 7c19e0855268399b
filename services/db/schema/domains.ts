import { boolean, index, jsonb, pgTable, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";
import { projects } from "./projects.ts";

/** What the last MX check of a domain found (resources/domains.ts, `verifyDomain`). */
export interface DomainCheck {
  /** RFC 3339 */
  checked_at: string;
  ok: boolean;
  /** the MX records found, lowest priority first (empty when there are none or the lookup failed) */
  found: { exchange: string; priority: number }[];
  /** why the check did not pass, in words; null when it passed */
  problem: string | null;
}

/**
 * A project's own receiving domain. `domain` is lowercase and belongs to at most one project. Mail for
 * it is accepted only once `verified` (its MX points at `INBOUND_DOMAIN`'s host name).
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
    verified: boolean("verified").notNull().default(false),
    verifiedAt: timestamp("verified_at", { withTimezone: true, precision: 3 }),
    lastCheck: jsonb("last_check").$type<DomainCheck>(),
    createdAt: timestamp("created_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex("domains_domain_key").on(t.domain), index("domains_project_idx").on(t.projectId)],
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
