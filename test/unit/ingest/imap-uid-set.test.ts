import { describe, expect, test } from "bun:test";
import { expandUidSet, uidSet } from "../../../services/ingest/imap.ts";

describe("IMAP UID sets", () => {
  test("ascending UIDs are written with their runs as ranges", () => {
    expect(uidSet([])).toBe("");
    expect(uidSet([7])).toBe("7");
    expect(uidSet([1, 2, 3, 4, 5])).toBe("1:5");
    expect(uidSet([1, 2, 4, 6, 7, 8, 10])).toBe("1:2,4,6:8,10");
  });

  test("a set from an ESEARCH answer is expanded to its numbers", () => {
    expect(expandUidSet("")).toEqual([]);
    expect(expandUidSet("5")).toEqual([5]);
    expect(expandUidSet("1:3,7,9:10")).toEqual([1, 2, 3, 7, 9, 10]);
    // a range may be written high to low (RFC 3501 sequence sets)
    expect(expandUidSet("4:2")).toEqual([2, 3, 4]);
  });

  test("the two are inverses on ascending UIDs", () => {
    const uids = [3, 4, 5, 9, 11, 12, 100, 101, 102, 103];
    expect(expandUidSet(uidSet(uids))).toEqual(uids);
  });
});
