/**
 * What every role (api, smtp, worker) is handed by the composition root. Built once by `bootstrap.ts`
 * (for `main.ts`, the tools and the test support, which injects temp directories and a clock).
 *
 * Invariant: every piece of state a process keeps across requests is a field here (or is owned by an
 * object that is), never a module-level map, so this file lists all of it. The intake's state is
 * declared below as interfaces and implemented in ingest/: this layer may not import ingest/
 * (tools/deps/rules.ts), so the shapes live here and ingest/ builds objects that satisfy them.
 */
import type { BlobStore } from "./attachments/blob-store.ts";
import type { Config } from "./config.ts";
import type { Database } from "./db/client.ts";
import type { RouteSnapshot } from "./db/schema/index.ts";
import type { AttachmentPolicy } from "./lib/attachment-policy.ts";
import type { Clock } from "./lib/clock.ts";
import type { SecretBox } from "./lib/crypto.ts";
import type { DnsResolver } from "./lib/dns.ts";
import type { Logger } from "./lib/logger.ts";

/** Runs a custom_json mapper config (through the worker pool in production). */
export type MapperRunner = (
  config: unknown,
  input: { message: unknown; ctx: unknown; meta?: unknown },
) => Promise<unknown>;

export interface AppContext {
  config: Config;
  database: Database;
  blobs: BlobStore;
  box: SecretBox;
  clock: Clock;
  /** Uniform random numbers in [0, 1) (the retry delay's jitter), injected so tests can fix them. */
  random: () => number;
  logger: Logger;
  setupToken: string;
  runMapper: MapperRunner;
  /** Tells local workers that new work is due (NOTIFY on Postgres). */
  wakeWorkers(): Promise<void>;
  /** The intake's per-process state, shared by the SMTP and HTTP intakes: see {@link IngestState}. */
  ingest: IngestState;
  /** The one DNS resolver (`DNS_SERVERS`, TTL cache) every lookup goes through (lib/dns.ts). */
  dns: DnsResolver;
}

export const WORK_CHANNEL = "mailhook_work";

/**
 * What the intake keeps per process, built once by bootstrap (`createIngestState`, ingest/state.ts).
 * Each part is process-wide on purpose: the admission slots bound the memory of every intake together,
 * and the group committer batches the writes of every intake together.
 */
export interface IngestState {
  /** Slots bounding the messages parsed at once, weighted by size (ingest/admission.ts). */
  readonly admission: IngestAdmission;
  /** Wakes the delivery workers after commits, a burst costing a few NOTIFYs (ingest/wake.ts). */
  readonly wake: WorkerWake;
  /** Each project's recent lookup (routes, usage), sparing a read per message (ingest/lookup.ts). */
  readonly lookups: ProjectLookupCache;
  /** Sends the store statements of concurrent messages in shared transactions (ingest/group-commit.ts). */
  readonly commits: GroupCommits;
  /** Bumped when a recipient address may have stopped existing, so recipient caches drop their hits. */
  readonly recipientChanges: RecipientChanges;
}

/** A counter of changes to who owns which address (ingest/intake.ts, `RecipientDirectory`). */
export interface RecipientChanges {
  readonly generation: number;
  bump(): void;
}

/** Admission to the intake pipeline. */
export interface IngestAdmission {
  /** Resolves once a message of `size` raw bytes may be parsed; the returned function gives the slot back. */
  acquire(size: number): Promise<() => void>;
}

/** Coalesced wake-ups of the delivery workers. */
export interface WorkerWake {
  /** Asks for a wake-up after a commit; never throws, never waits. */
  request(): void;
}

/** An enabled, non-deleted route of a project with its endpoint URL, as the intake's lookup reads it. */
export interface EnabledRoute
  extends Pick<RouteSnapshot, "name" | "endpoint_id" | "endpoint_url" | "kid" | "pipeline"> {
  id: string;
  rule: unknown;
  pipeline_text: string | null;
  /** null: the service-wide attachment policy */
  attachment_policy: AttachmentPolicy | null;
}

/** What the intake needs to know about a project before storing a message (ingest/lookup.ts). */
export interface ProjectLookup {
  usedBytes: number;
  /** `messages.id` of the same raw message already stored in the project, or null */
  duplicatePk: string | null;
  /** oldest route first */
  routes: EnabledRoute[];
  /**
   * The routes exactly as the database rendered them (`jsonb` as text): the store statement compares
   * it with the current routes, so a cached lookup never creates events from outdated routes.
   */
  routesJson: string;
  /** the project's intake policy (`{reject, hold}` rules), or null for none */
  intakePolicy?: { reject: unknown; hold: unknown } | null;
}

/** Recent lookups by project id; `now` is in ms (entries expire). */
export interface ProjectLookupCache {
  get(projectId: string, now: number): ProjectLookup | null;
  set(projectId: string, lookup: ProjectLookup, now: number): void;
  /** Records the project's usage as the store statement returned it; keeps the entry's expiry. */
  updateUsage(projectId: string, usedBytes: number): void;
  delete(projectId: string): void;
}

/** One write statement of the intake: its SQL text and `$n` parameters, its project, its blob lock ids. */
export interface BatchedStatement {
  text: string;
  params: unknown[];
  projectId: string;
  blobLocks: readonly number[];
}

/** Group commit of the intake's write statements. */
export interface GroupCommits {
  /** The statement's rows, once the transaction it went out in has committed. */
  run<T>(statement: BatchedStatement): Promise<T[]>;
  /** batches sent, statements in them, statements retried alone (diagnostics: the average batch size) */
  readonly stats: { readonly batches: number; readonly statements: number; readonly retried: number };
}
