/**
 * The intake seam: how a raw message taken in by any source (the SMTP listener, the HTTP upload, a
 * mailbox poller) reaches `ingestMessage`. A source keeps its transport work (listening, spooling, its
 * replies) and hands each message to an {@link Intake}, either for one known project (the HTTP upload:
 * the API key names it) or for envelope recipients, which are resolved to projects here. The
 * {@link IntakeOutcome} that comes back is rendered by the source: SMTP as one reply line, HTTP as a
 * status and a JSON body. How to add a source: docs/architecture.md, "Adding an intake source".
 *
 * Invariants:
 * - a message for recipients of several projects is ingested once per project, one project after the
 *   other, each time with only that project's recipients in its envelope;
 * - every project is tried even when an earlier one failed. The outcome's deciding failure is a
 *   transient one if there is any, since a retry of the whole message is then safe (projects that
 *   already committed deduplicate it); otherwise it is the first permanent refusal;
 * - the address → project cache lives on a {@link RecipientDirectory} owned by its source, never in
 *   module state. Only hits are cached, so a new project is reachable at once.
 */
import type { AppContext } from "../context.ts";
import { AppError, type ErrorCode } from "../lib/errors.ts";
import type { Envelope, SourceType } from "../lib/message.ts";
import { addressTag, projectByRecipient } from "../resources/domains.ts";
import { type IngestInput, type IngestResult, ingestMessage } from "./ingest.ts";
import type { RawSource } from "./raw.ts";
import { assessSender, type SenderVerdict, type SmtpTransaction } from "./trust/index.ts";

/** A raw message as a source hands it over: bytes in memory, or a spool file the source owns and removes. */
export type IntakeRaw = RawSource;

/** One project's failure to take the message, and whether a retry of the same bytes may succeed. */
export interface IntakeFailure {
  projectId: string;
  error: unknown;
  transient: boolean;
}

/** What became of one message: one result per project that took it, one failure per project that did not. */
export interface IntakeOutcome {
  accepted: IngestResult[];
  failures: IntakeFailure[];
  /** the failure a source with one reply for the whole message reports; null when every project took it */
  failure: IntakeFailure | null;
  /** recipients that name no project (only when the intake resolved them); the source decides what that means */
  unknownRecipients: string[];
}

/** A source that runs on its own (a listener, a poller), as its role starts and stops it. */
export interface IntakeSource {
  /** its source type, stored with every message it takes in */
  readonly name: SourceType;
  /** Starts taking mail in through `intake`; resolves once it does (a listener is bound). */
  start(ctx: AppContext, intake: Intake): Promise<RunningSource>;
}

/** A started source: `stop` stops taking mail in and waits for the messages in hand. */
export interface RunningSource {
  /** the port a listening source is bound to */
  port?: number;
  /** the base URL of a source that serves HTTP */
  url?: string;
  stop(): Promise<void>;
}

/**
 * Refusals a retry of the same bytes cannot change: SMTP answers them 5xx, HTTP 4xx or 507. Anything
 * else (the database or the blob store down, an unexpected error) is transient.
 */
const PERMANENT_REFUSALS: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  "ingest.too_large",
  "ingest.quota_exceeded",
  "ingest.unparseable",
  "projects.not_found",
  "ingest.rejected",
]);

/** Whether an ingest failure is transient (the sender should retry) rather than a permanent refusal. */
export function isTransient(err: unknown): boolean {
  return !(err instanceof AppError && PERMANENT_REFUSALS.has(err.code));
}

/**
 * Groups recipients by project, keeping their order (and any repeats) within each project; addresses
 * `projectOf` does not know go to `unknown`.
 */
export function groupByProject(
  addresses: readonly string[],
  projectOf: (address: string) => string | null | undefined,
): { byProject: Map<string, string[]>; unknown: string[] } {
  const byProject = new Map<string, string[]>();
  const unknown: string[] = [];
  for (const address of addresses) {
    const projectId = projectOf(address);
    if (projectId == null) unknown.push(address);
    else byProject.set(projectId, [...(byProject.get(projectId) ?? []), address]);
  }
  return { byProject, unknown };
}

/** How long a resolved address is trusted, and how many are kept. */
const RECIPIENT_CACHE_MS = 10_000;
const RECIPIENT_CACHE_MAX = 10_000;

/** Options of a {@link RecipientDirectory}; the defaults are the production ones. */
export interface RecipientDirectoryOptions {
  ttlMs?: number;
  maxEntries?: number;
  /** milliseconds since the epoch */
  now?: () => number;
  /** the project owning an address (default: `projectByRecipient`, inbound and own addresses) */
  lookup?: (address: string) => Promise<{ id: string } | null>;
}

/**
 * Recipient address → project id, cached briefly: a steady stream to one address costs one lookup per
 * 10 s instead of one per message. Only hits are cached, so a new project or address is reachable at
 * once. A deleted project may still be resolved for 10 s, and its messages are then refused by ingest
 * (`projects.not_found`). Deleting one of a project's own addresses or domains (or turning catch-all
 * off) empties the cache of every directory in the process that deleted it (`ctx.ingest.recipientChanges`),
 * so it is refused at once there, and within 10 s by other processes. When full, the cache is emptied
 * rather than evicted entry by entry.
 */
export class RecipientDirectory {
  readonly #cache = new Map<string, { projectId: string; until: number }>();
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  readonly #lookup: (address: string) => Promise<{ id: string } | null>;
  readonly #ctx: AppContext;
  /** the `ctx.ingest.recipientChanges` generation the cache was filled under (read at first use) */
  #generation: number | null = null;

  constructor(ctx: AppContext, opts: RecipientDirectoryOptions = {}) {
    this.#ctx = ctx;
    this.#ttlMs = opts.ttlMs ?? RECIPIENT_CACHE_MS;
    this.#maxEntries = opts.maxEntries ?? RECIPIENT_CACHE_MAX;
    this.#now = opts.now ?? Date.now;
    this.#lookup = opts.lookup ?? ((address) => projectByRecipient(ctx, address));
  }

  /** The project id of an inbound address (case-insensitive), or null when no project owns it. */
  async projectOf(address: string): Promise<string | null> {
    const key = address.toLowerCase();
    const now = this.#now();
    const generation = this.#ctx.ingest.recipientChanges.generation;
    if (this.#generation !== generation) {
      this.#cache.clear();
      this.#generation = generation;
    }
    const hit = this.#cache.get(key);
    if (hit && hit.until > now) return hit.projectId;
    const project = await this.#lookup(address);
    if (!project) return null;
    if (this.#cache.size >= this.#maxEntries) this.#cache.clear();
    this.#cache.set(key, { projectId: project.id, until: now + this.#ttlMs });
    return project.id;
  }

  /** Resolves every address (each distinct one once) and groups them with {@link groupByProject}. */
  async group(
    addresses: readonly string[],
  ): Promise<{ byProject: Map<string, string[]>; unknown: string[] }> {
    const resolved = new Map<string, string | null>();
    for (const address of new Set(addresses)) resolved.set(address, await this.projectOf(address));
    return groupByProject(addresses, (address) => resolved.get(address));
  }
}

/** The connection an SMTP message came in on: the client's address and its HELO/EHLO name. */
export interface SmtpClient {
  ip: string;
  helo: string;
}

/** Options of an {@link Intake}: those of its directory, and the ingest call (tests replace it). */
export interface IntakeOptions extends RecipientDirectoryOptions {
  ingest?: (ctx: AppContext, input: IngestInput) => Promise<IngestResult>;
  /** the sender's verdict of one message (default: `assessSender`, trust/index.ts) */
  assess?: (raw: IntakeRaw, smtp: SmtpTransaction | null) => Promise<SenderVerdict>;
}

/** One source's way into ingest: its source type, its recipient directory, and the fan-out per project. */
export class Intake {
  /** where this source's recipients are resolved (SMTP asks it at RCPT time) */
  readonly recipients: RecipientDirectory;
  readonly #ingest: (ctx: AppContext, input: IngestInput) => Promise<IngestResult>;
  readonly #assess: (raw: IntakeRaw, smtp: SmtpTransaction | null) => Promise<SenderVerdict>;

  constructor(
    readonly ctx: AppContext,
    readonly source: SourceType,
    opts: IntakeOptions = {},
  ) {
    this.recipients = new RecipientDirectory(ctx, opts);
    this.#ingest = opts.ingest ?? ingestMessage;
    this.#assess = opts.assess ?? ((raw, smtp) => assessSender(ctx, raw, source, smtp));
  }

  /** Ingests a message into one known project, with the envelope as given (null for the HTTP upload). */
  async acceptForProject(
    projectId: string,
    raw: IntakeRaw,
    envelope: Envelope | null,
  ): Promise<IntakeOutcome> {
    const outcome = emptyOutcome();
    const verdict = await this.#assess(raw, null);
    await this.#acceptOne(outcome, projectId, raw, envelope, verdict);
    return decided(outcome);
  }

  /**
   * Ingests a message once per project, each time with that project's recipients as `rcpt_to`, for
   * recipients already resolved (SMTP resolves them one by one at RCPT time, to refuse unknown ones).
   * `client` is the SMTP connection's (its sender is authenticated from it, once for all projects).
   */
  async acceptForProjects(
    raw: IntakeRaw,
    byProject: ReadonlyMap<string, readonly string[]>,
    mailFrom: string,
    client: SmtpClient | null = null,
  ): Promise<IntakeOutcome> {
    const outcome = emptyOutcome();
    const rcptTo = [...byProject.values()].flat();
    // Once per message, whatever the number of projects it goes to.
    const verdict = await this.#assess(raw, client && { ...client, mailFrom, rcptTo });
    for (const [projectId, rcptTo] of byProject) {
      // The tag of the project's first recipient (`box+tag@…`), the mapper's `envelope.tag`; kept only when
      // there is one, so an envelope without it reads as before (absent = null).
      const tag = addressTag(rcptTo[0] ?? "");
      const envelope: Envelope = {
        mail_from: mailFrom,
        rcpt_to: [...rcptTo],
        ...(client?.helo ? { helo: client.helo } : {}),
        ...(client?.ip ? { client_ip: client.ip } : {}),
        ...(tag === null ? {} : { tag }),
      };
      await this.#acceptOne(outcome, projectId, shareable(raw, byProject.size), envelope, verdict);
    }
    return decided(outcome);
  }

  /**
   * Resolves the recipients to projects, then ingests as {@link acceptForProjects}. Rejects when a
   * recipient lookup fails (nothing was ingested: transient).
   */
  async acceptForRecipients(
    raw: IntakeRaw,
    recipients: readonly string[],
    mailFrom: string,
  ): Promise<IntakeOutcome> {
    const { byProject, unknown } = await this.recipients.group(recipients);
    const outcome = await this.acceptForProjects(raw, byProject, mailFrom);
    return { ...outcome, unknownRecipients: unknown };
  }

  async #acceptOne(
    outcome: IntakeOutcome,
    projectId: string,
    raw: IntakeRaw,
    envelope: Envelope | null,
    verdict: SenderVerdict,
  ): Promise<void> {
    try {
      outcome.accepted.push(
        await this.#ingest(this.ctx, { projectId, raw, sourceType: this.source, envelope, verdict }),
      );
    } catch (error) {
      outcome.failures.push({ projectId, error, transient: isTransient(error) });
    }
  }
}

function emptyOutcome(): IntakeOutcome {
  return { accepted: [], failures: [], failure: null, unknownRecipients: [] };
}

function decided(outcome: IntakeOutcome): IntakeOutcome {
  outcome.failure = outcome.failures.find((f) => f.transient) ?? outcome.failures[0] ?? null;
  return outcome;
}

/**
 * The raw message as each of `projects` ingests it. A spool file whose bytes were not kept in memory
 * may be moved into the blob store by the first project (ingest adopts a hashed file), so with several
 * projects each gets the plain file, which ingest copies instead.
 */
function shareable(raw: IntakeRaw, projects: number): IntakeRaw {
  if (projects <= 1 || raw instanceof Uint8Array || raw.bytes !== undefined) return raw;
  return { path: raw.path, size: raw.size };
}
