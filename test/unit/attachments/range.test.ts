import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { parseRange, type RangeResult } from "../../../services/attachments/range.ts";

const SIZE = 100;
const none: RangeResult = { kind: "none" };
const invalid: RangeResult = { kind: "invalid" };
const unsatisfiable: RangeResult = { kind: "unsatisfiable" };
const range = (start: number, end: number): RangeResult => ({ kind: "range", start, end });

describe("parseRange on a 100-byte representation", () => {
  const cases: [string | null, RangeResult][] = [
    [null, none],
    // int-range
    ["bytes=0-0", range(0, 0)],
    ["bytes=0-99", range(0, 99)],
    ["bytes=10-19", range(10, 19)],
    ["bytes=99-99", range(99, 99)],
    ["bytes=50-1000", range(50, 99)], // last-pos clamps to size - 1
    ["bytes=0-99999999999999999999999", range(0, 99)],
    // open int-range
    ["bytes=0-", range(0, 99)],
    ["bytes=99-", range(99, 99)],
    // suffix-range
    ["bytes=-1", range(99, 99)],
    ["bytes=-10", range(90, 99)],
    ["bytes=-100", range(0, 99)],
    ["bytes=-500", range(0, 99)], // longer than the representation → all of it
    // unit is case-insensitive, surrounding whitespace trimmed
    ["BYTES=1-2", range(1, 2)],
    ["  bytes=1-2  ", range(1, 2)],
    ["bytes= 1-2", range(1, 2)],
    // unsatisfiable
    ["bytes=100-", unsatisfiable],
    ["bytes=100-200", unsatisfiable],
    ["bytes=1000-2000", unsatisfiable],
    ["bytes=-0", unsatisfiable],
    // multiple ranges: served whole (RFC 9110 §14.2 allows ignoring Range)
    ["bytes=0-1,5-9", none],
    ["bytes=0-1, 200-300", none],
    ["bytes=-5,0-", none],
    // other units are ignored (RFC 9110 §14.2 MUST)
    ["items=0-5", none],
    // malformed
    ["", invalid],
    ["bytes", invalid],
    ["bytes=", invalid],
    ["bytes=,", invalid],
    ["bytes=-", invalid],
    ["bytes=abc", invalid],
    ["bytes=5-2", invalid],
    ["bytes=1-2-3", invalid],
    ["bytes=+1-2", invalid],
    ["bytes=1.5-2", invalid],
    ["bytes=0x10-20", invalid],
    ["bytes=--5", invalid],
    ["bytes 0-5", invalid],
    ["bytes=0-1,abc", invalid],
    ["bytes=0-1,5-2", invalid],
    ["=0-5", invalid],
  ];

  for (const [header, expected] of cases) {
    test(`${JSON.stringify(header)} → ${JSON.stringify(expected)}`, () => {
      expect(parseRange(header, SIZE)).toEqual(expected);
    });
  }
});

describe("parseRange on an empty representation", () => {
  test.each(["bytes=0-", "bytes=0-0", "bytes=-1", "bytes=-0"])("%s is unsatisfiable", (header) => {
    expect(parseRange(header, 0)).toEqual(unsatisfiable);
  });
});

describe("parseRange properties", () => {
  test("every satisfiable range lies inside the representation and is non-empty", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000 }),
        fc.integer({ min: 0, max: 20_000 }),
        fc.option(fc.integer({ min: 0, max: 20_000 })),
        (size, first, length) => {
          const header = length === null ? `bytes=${first}-` : `bytes=${first}-${first + length}`;
          const r = parseRange(header, size);
          if (first >= size) return r.kind === "unsatisfiable";
          return r.kind === "range" && r.start === first && r.end <= size - 1 && r.start <= r.end;
        },
      ),
    );
  });
});
