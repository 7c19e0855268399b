/**
 * The mapper input the REPL (and the mapper benchmark) runs on: a raw `.eml` parsed by the service's own
 * parser, or a message already stored by the service. Either way the message is exactly what delivery
 * hands the mapper, and `ctx` is what `POST /v1/mapper/preview` builds (no event or route yet).
 */

import { existsSync } from "node:fs";
import { join } from "node:path";
import { and, asc, desc, eq, inArray, or, sql } from "drizzle-orm";
import type { MapperInput } from "../mapper/index.ts";
import { withFullBodies } from "../services/attachments/body-blobs.ts";
import { isMessagePk, messageIdCandidates } from "../services/attachments/tokens.ts";
import { createBlobStore } from "../services/bootstrap.ts";
import { ConfigError, loadConfig } from "../services/config.ts";
import { type Database, openDatabase, waitForPostgres } from "../services/db/client.ts";
import { messages } from "../services/db/schema/index.ts";
import type { NormalizedMessage } from "../services/lib/message.ts";
import { parseMessage } from "../services/mail/parse.ts";
import { previewInput } from "../services/resources/mapper-preview.ts";

/** Fixed `ctx.now` and `received_at` of an `.eml`, so the REPL's output is reproducible. */
export const REPL_NOW = "2025-01-01T00:00:00Z";

/** A message id the REPL could not resolve (exit 1 with this text). */
export class InputError extends Error {}

/**
 * Parses raw bytes with the service's parser. A synthetic Message-ID (the message has none) is derived
 * from a fixed UUID, so it is the same on every run.
 */
export async function parseEmlBytes(raw: Uint8Array): Promise<NormalizedMessage> {
  const parsed = await parseMessage(raw, {
    receivedAt: new Date(REPL_NOW),
    inboundDomain: process.env.INBOUND_DOMAIN?.trim().toLowerCase() || "in.localhost",
    newUuid: () => "00000000-0000-4000-8000-000000000000",
  });
  return parsed.message;
}

/** Reads a file the user named; a missing or unreadable one is an InputError naming it. */
export async function readInputFile(path: string, what: string): Promise<Uint8Array> {
  try {
    return new Uint8Array(await Bun.file(path).arrayBuffer());
  } catch (err) {
    throw new InputError(`cannot read the ${what} ${path}: ${(err as Error).message}`);
  }
}

/** A JSON file the user named (`--config`, `--meta`); bad JSON is an InputError naming the file. */
export async function readJsonFile(path: string, what: string): Promise<unknown> {
  const text = new TextDecoder().decode(await readInputFile(path, what));
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new InputError(`the ${what} ${path} is not JSON: ${(err as Error).message}`);
  }
}

export async function emlInput(path: string, meta: Record<string, unknown> = {}): Promise<MapperInput> {
  const raw = await readInputFile(path, "message");
  let message: NormalizedMessage;
  try {
    message = await parseEmlBytes(raw);
  } catch (err) {
    throw new InputError(`${path} cannot be parsed as a message: ${(err as Error).message}`);
  }
  return previewInput(REPL_NOW, "repl", { message, rawSize: raw.length, source: "api" }, meta);
}

/**
 * The service's database as `serve` configures it: `DATABASE_URL`, else the embedded one under `DATA_DIR`
 * (which a running `serve` holds: DatabaseLockedError). An unreachable or refusing Postgres is one clear
 * line (DatabaseUnavailableError), not a stack trace.
 */
async function serviceDatabase(): Promise<Database> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) throw new InputError(err.message);
    throw err;
  }
  if (config.databaseUrl) await waitForPostgres(config.databaseUrl, 0);
  // Opening PGlite on a directory without a database would create an empty one there.
  else if (!existsSync(join(config.dataDir, "pg", "PG_VERSION"))) {
    throw new InputError(
      `no embedded database in ${config.dataDir}: set DATA_DIR to the service's data directory, or DATABASE_URL`,
    );
  }
  return openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 1 });
}

/** One stored message in `--list`. */
export interface StoredSummary {
  id: string;
  receivedAt: string;
  projectId: string;
  messageId: string;
  subject: string;
}

/** The newest stored messages (of one project, or of all), for `--list`: what `--message-id` can load. */
export async function listStored(projectId: string | undefined, limit = 20): Promise<StoredSummary[]> {
  const database = await serviceDatabase();
  try {
    const rows = await database.db
      .select({
        id: messages.id,
        receivedAt: messages.receivedAt,
        projectId: messages.projectId,
        messageId: messages.messageId,
        subject: sql<string | null>`${messages.parsed}->>'subject'`,
      })
      .from(messages)
      .where(projectId === undefined ? undefined : eq(messages.projectId, projectId))
      .orderBy(desc(messages.receivedAt))
      .limit(limit);
    return rows.map((r) => ({
      id: r.id,
      receivedAt: new Date(r.receivedAt).toISOString(),
      projectId: r.projectId,
      messageId: r.messageId,
      subject: r.subject ?? "",
    }));
  } finally {
    await database.close();
  }
}

/**
 * A stored message, found by its Message-ID (with or without angle brackets, as the preview endpoint
 * takes it) or by its own id (`msg_…`, as `--list` prints it), in the service's database: `DATABASE_URL`, else the
 * embedded database under `DATA_DIR` (which the running service holds: stop it first). `projectId`
 * narrows the search; a Message-ID stored in several projects needs it. A Message-ID stored more than
 * once in a project (with different bytes) is an InputError naming the `msg_…` ids to choose from:
 * never the newest, which anyone reusing the Message-ID can make theirs.
 */
export async function storedInput(
  id: string,
  projectId: string | undefined,
  meta: Record<string, unknown> = {},
): Promise<MapperInput> {
  const database = await serviceDatabase();
  try {
    const wanted = id.trim();
    const byId = inArray(messages.messageId, messageIdCandidates(wanted));
    const match = isMessagePk(wanted) ? or(eq(messages.id, wanted), byId) : byId;
    const found = await database.db
      .select({
        id: messages.id,
        projectId: messages.projectId,
        parsed: messages.parsed,
        size: messages.rawSizeBytes,
        source: messages.sourceType,
        envelope: messages.envelope,
        textBlobKey: messages.textBlobKey,
        htmlBlobKey: messages.htmlBlobKey,
      })
      .from(messages)
      .where(projectId === undefined ? match : and(eq(messages.projectId, projectId), match))
      .orderBy(asc(messages.receivedAt), asc(messages.id))
      .limit(50);
    // A message's own id names it alone, whatever Message-IDs look like it.
    const own = found.filter((r) => r.id === wanted);
    const rows = own.length > 0 ? own : found;
    const projects = [...new Set(rows.map((r) => r.projectId))];
    const where = projectId === undefined ? "" : ` in project ${projectId}`;
    if (projects.length > 1) {
      throw new InputError(
        `message ${wanted} is stored in ${projects.length} projects (${projects.join(", ")}): pass --project`,
      );
    }
    const [row, second] = rows;
    if (!row) throw new InputError(`no stored message ${wanted}${where}`);
    if (second) {
      throw new InputError(
        `Message-ID ${wanted} names ${rows.length} stored messages with different bytes${where} ` +
          `(${rows.map((r) => r.id).join(", ")}): pass one of these ids to --message-id`,
      );
    }
    // A body kept in the blob store (DATA_DIR's, or S3 as configured) is read back whole.
    const message =
      row.textBlobKey || row.htmlBlobKey
        ? await withFullBodies({ blobs: createBlobStore(loadConfig()) }, row.parsed, row)
        : row.parsed;
    return previewInput(
      REPL_NOW,
      row.projectId,
      { message, rawSize: row.size, source: row.source, envelope: row.envelope },
      meta,
    );
  } finally {
    await database.close();
  }
}
