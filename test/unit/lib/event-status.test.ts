import { describe, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import {
  DUE_STATUSES,
  EVENT_STATUSES,
  EventStatusSchema,
  HELD_STATUSES,
  isReplayable,
  REPLAYABLE_STATUSES,
  statusListSql,
} from "../../../services/lib/event-status.ts";

describe("event statuses", () => {
  test("the TypeBox schema accepts exactly the declared statuses", () => {
    for (const status of EVENT_STATUSES) expect(Value.Check(EventStatusSchema, status)).toBe(true);
    for (const other of ["", "PENDING", "queued", null, 1])
      expect(Value.Check(EventStatusSchema, other)).toBe(false);
  });

  test("the due, replayable and held sets split the statuses without overlap", () => {
    expect([...DUE_STATUSES, ...REPLAYABLE_STATUSES, ...HELD_STATUSES].sort()).toEqual(
      [...EVENT_STATUSES].sort(),
    );
  });

  test.each([
    ["delivered", true],
    ["dead", true],
    ["discarded", true],
    ["pending", false],
    ["retry", false],
    ["held", false],
    ["anything", false],
  ])("%p is replayable: %p", (status, expected) => {
    expect(isReplayable(status)).toBe(expected);
  });

  test("a status set renders as the literal SQL list the due index's predicate is written with", () => {
    expect(statusListSql(DUE_STATUSES)).toBe("('pending', 'retry')");
    expect(statusListSql(REPLAYABLE_STATUSES)).toBe("('delivered', 'dead', 'discarded')");
  });
});
