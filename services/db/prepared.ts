/**
 * Runs hot-path statements (the intake's, API-key authentication) as named prepared statements on
 * Postgres, and the intake's writes through its group committer (ingest/group-commit.ts).
 *
 * drizzle's `db.execute` sends every raw query unnamed and unprepared; postgres.js then describes a
 * parameterised query first (Parse/Describe/Flush, wait for the ParameterDescription, then
 * Bind/Execute): two round trips, and Postgres parses and plans the statement every time. Prepared by
 * postgres.js (`prepare: true`, cached per connection by text and parameter types) the same statement
 * is one round trip and is planned once per connection. On PGlite (in process) `preparedRows` goes
 * through `Database.rows`, and the group committer through the PGlite client.
 */
import type { SQL } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { BLOB_LOCK_NAMESPACE } from "../attachments/retention.ts";
import {
  GroupCommitter,
  type PgliteClient,
  type PostgresJsClient,
  pgliteRunner,
  postgresRunner,
} from "../ingest/group-commit.ts";
import type { Database } from "./client.ts";

const dialect = new PgDialect();

function postgresClient(database: Database): PostgresJsClient | null {
  if (database.kind !== "postgres") return null;
  const client = (database.db as unknown as { $client?: Partial<PostgresJsClient> }).$client;
  return client && typeof client.unsafe === "function" ? (client as PostgresJsClient) : null;
}

/** The rows of `query`, as a prepared statement on Postgres. */
export async function preparedRows<T>(database: Database, query: SQL): Promise<T[]> {
  const client = postgresClient(database);
  if (!client) return database.rows<T>(query);
  const { sql: text, params } = dialect.sqlToQuery(query);
  return (await client.unsafe(text, params, { prepare: true })) as T[];
}

const committers = new WeakMap<Database, GroupCommitter>();

/** The group committer of a database (ingest/group-commit.ts). */
export function groupCommitter(database: Database): GroupCommitter {
  let c = committers.get(database);
  if (!c) {
    const client = postgresClient(database);
    c = new GroupCommitter(
      client
        ? postgresRunner(client, BLOB_LOCK_NAMESPACE)
        : pgliteRunner((database.db as unknown as { $client: PgliteClient }).$client, BLOB_LOCK_NAMESPACE),
    );
    committers.set(database, c);
  }
  return c;
}

/**
 * The rows of a write statement of the intake (SQL text with `$n` parameters), committed in a group
 * commit with the concurrent ones (ingest/group-commit.ts).
 */
export function groupCommittedRows<T>(
  database: Database,
  text: string,
  params: unknown[],
  projectId: string,
  blobLocks: readonly number[],
): Promise<T[]> {
  return groupCommitter(database).run<T>({ text, params, projectId, blobLocks });
}
