/**
 * The dependency rule of `services/` and `mapper/`, as one table: each layer and the layers its files
 * may import. Anything not listed is forbidden. `bun tools/deps/check.ts` (run by CI and by
 * test/unit/architecture.test.ts) fails on a forbidden import and on any file-level import cycle.
 *
 * Read it bottom-up: `lib` and `mapper` are leaves; `config`, `db` and `mail` sit on them; the domain
 * (`attachments`, `routing`, `resources`) in the middle; the entry points (`ingest`, `delivery`, `api`,
 * `ui`) on top, never importing each other except `api → ingest` (the HTTP upload is an intake); the
 * composition root (`main`, `bootstrap`, `roles`, `http`) wires everything.
 */

/** A layer: the path prefixes (relative to the repository root) whose files belong to it. */
export interface Layer {
  name: string;
  paths: readonly string[];
  mayImport: readonly string[];
}

const BASE = ["lib", "mapper", "config"] as const;
const DOMAIN = [...BASE, "db", "mail", "context", "attachments", "routing", "resources"] as const;

export const LAYERS: readonly Layer[] = [
  { name: "mapper", paths: ["mapper/"], mayImport: [] },
  { name: "lib", paths: ["services/lib/"], mayImport: ["mapper"] },
  { name: "config", paths: ["services/config.ts"], mayImport: ["lib", "mapper"] },
  { name: "db", paths: ["services/db/"], mayImport: [...BASE] },
  { name: "mail", paths: ["services/mail/"], mayImport: ["lib", "mapper"] },
  { name: "context", paths: ["services/context.ts"], mayImport: [...BASE, "db", "attachments"] },
  { name: "attachments", paths: ["services/attachments/"], mayImport: [...BASE, "db", "context"] },
  { name: "routing", paths: ["services/routing/"], mayImport: ["lib", "mapper", "mail"] },
  { name: "resources", paths: ["services/resources/"], mayImport: [...DOMAIN] },
  { name: "ingest", paths: ["services/ingest/"], mayImport: [...DOMAIN] },
  // The address guard is pure (no service imports): delivery judges webhook URLs with it, and the
  // mailboxes (resources, ingest) judge IMAP hosts.
  { name: "delivery", paths: ["services/delivery/"], mayImport: [...DOMAIN] },
  { name: "api", paths: ["services/api/"], mayImport: [...DOMAIN, "ingest"] },
  { name: "ui", paths: ["services/ui/"], mayImport: [...DOMAIN] },
  {
    name: "composition",
    paths: ["services/main.ts", "services/bootstrap.ts", "services/roles.ts", "services/http.ts"],
    mayImport: [...DOMAIN, "ingest", "delivery", "api", "ui", "composition"],
  },
];
