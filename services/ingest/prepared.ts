/**
 * Runs the intake's hot-path statements as named prepared statements on Postgres.
 *
 * drizzle's `db.execute` sends every raw query unnamed and unprepared; postgres.js then describes a
 * parameterised query first (Parse/Describe/Flush, wait for the ParameterDescription, then
 * Bind/Execute): two round trips, and Postgres parses and plans the statement every time. Prepared by
 * postgres.js (`prepare: true`, cached per connection by text and parameter types) the same statement
 * is one round trip and is planned once per connection. PGlite runs in-process and goes through
 * `Database.rows` as before.
 */
import type { SQL } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import type { Database } from "../db/client.ts";

const dialect = new PgDialect();

/** The part of the postgres.js client used here (drizzle exposes it as `db.$client`). */
interface PostgresJsClient {
  unsafe(query: string, params: unknown[], options: { prepare: boolean }): PromiseLike<unknown>;
}

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
