import { describe, expect, test } from "bun:test";
import { EARLY_FREE_MAX_BODY, freesSlotEarly } from "../../../services/delivery/worker.ts";

describe("when an attempt gives its slot back before its result is written", () => {
  test("a small body's attempt does while fewer results than slots wait for the recorder", () => {
    expect(freesSlotEarly(0, 64, 500)).toBe(true);
    expect(freesSlotEarly(63, 64, 500)).toBe(true);
  });

  test("not once as many results as slots wait: the database's pace slows the requests down", () => {
    expect(freesSlotEarly(64, 64, 500)).toBe(false);
    expect(freesSlotEarly(1, 1, 0)).toBe(false);
  });

  test("a large body's attempt keeps its slot until its result is written", () => {
    expect(freesSlotEarly(0, 64, EARLY_FREE_MAX_BODY - 1)).toBe(true);
    expect(freesSlotEarly(0, 64, EARLY_FREE_MAX_BODY)).toBe(false);
    expect(freesSlotEarly(0, 64, 8 * 1024 * 1024)).toBe(false);
  });
});
