/**
 * The statuses of an event (docs/delivery.md, "Event statuses") and the two sets the system acts on,
 * declared once. The database column type, the API's TypeBox schema and OpenAPI enum, the metrics
 * gauge labels, the claim and replay SQL and the dashboard are all derived from these lists.
 *
 * Invariant: a status set used in SQL is rendered as a literal list (`status in ('pending', 'retry')`),
 * never as a bound parameter, because the partial index `events_due_idx` (db/schema/events.ts) is only
 * used when the planner can see that the query's predicate matches the index's own.
 */
import { type TLiteral, Type } from "@sinclair/typebox";

/** Every status an event can have, in the order the API documents them. */
/** `held`: stored by the project's intake policy and waiting to be released or discarded (never claimed). */
export const EVENT_STATUSES = ["pending", "delivered", "retry", "dead", "discarded", "held"] as const;

/** One of {@link EVENT_STATUSES}. */
export type EventStatus = (typeof EVENT_STATUSES)[number];

/** A tuple of TypeBox literals, one per string of `T`, so the union's static type stays exact. */
type Literals<T extends readonly string[]> = { -readonly [K in keyof T]: TLiteral<T[K]> };

/** {@link EVENT_STATUSES} as a TypeBox union of literals (an `enum` in the OpenAPI document). */
export const EventStatusSchema = Type.Union(
  EVENT_STATUSES.map((status) => Type.Literal(status)) as Literals<typeof EVENT_STATUSES>,
);

/** Statuses a worker claims from once `next_attempt_at` is due: new work and retries. */
export const DUE_STATUSES = ["pending", "retry"] as const satisfies readonly EventStatus[];

/** One of {@link DUE_STATUSES}: the status of a claimed event. */
export type DueStatus = (typeof DUE_STATUSES)[number];

/** Terminal statuses a replay accepts (docs/delivery.md, "Replay"). */
export const REPLAYABLE_STATUSES = [
  "delivered",
  "dead",
  "discarded",
] as const satisfies readonly EventStatus[];

/** Statuses waiting for a person: released (`pending`) or discarded through the hold queue. */
export const HELD_STATUSES = ["held"] as const satisfies readonly EventStatus[];

/** Whether an event in `status` can be replayed. */
export function isReplayable(status: string): boolean {
  return (REPLAYABLE_STATUSES as readonly string[]).includes(status);
}

/**
 * `statuses` as an SQL literal list, `('pending', 'retry')`, for `status in …` (see the module
 * comment for why it is not a parameter). Safe to splice raw: the values come from the lists above.
 */
export function statusListSql(statuses: readonly EventStatus[]): string {
  return `(${statuses.map((s) => `'${s}'`).join(", ")})`;
}
