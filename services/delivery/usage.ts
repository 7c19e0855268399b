/**
 * Taking bytes off the storage usage (ingest/quota.ts) when an event's stored body goes: a replay, a
 * bulk replay, a stored body found missing from the blob store.
 */
import { type SQL, sql } from "drizzle-orm";

/**
 * Two CTEs, `shrink_messages` and `shrink_projects`, for a statement that has taken bodies off
 * events: for each row of `rows` (`message_pk`, `project_id`, `n`), `n` bytes come off its message's
 * `stored_bytes` and its project's `storage_bytes`, never below 0; rows of one message or project add
 * up. The statement locks the messages before their events (the order retention and the attempt
 * recorder use).
 */
export function shrinkUsage(rows: SQL): SQL {
  return sql`shrink_messages as (
      update messages m set stored_bytes = greatest(m.stored_bytes - s.n, 0)
      from (select message_pk, sum(n) as n from (${rows}) r group by message_pk) s
      where m.id = s.message_pk
    ),
    shrink_projects as (
      update projects p set storage_bytes = greatest(p.storage_bytes - s.n, 0)
      from (select project_id, sum(n) as n from (${rows}) r group by project_id) s
      where p.id = s.project_id
    )`;
}
