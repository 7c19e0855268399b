import { describe, expect, test } from "bun:test";
import type { ProjectLookup } from "../../../services/context.ts";
import { LOOKUP_TTL_MS, RecentProjectLookups } from "../../../services/ingest/lookup.ts";

const lookup = (over: Partial<ProjectLookup> = {}): ProjectLookup => ({
  usedBytes: 100,
  duplicatePk: null,
  routes: [],
  routesJson: "[]",
  ...over,
});

describe("RecentProjectLookups", () => {
  test("a lookup is reused until LOOKUP_TTL_MS after it was stored, then forgotten", () => {
    const cache = new RecentProjectLookups();
    cache.set("prj_a", lookup(), 1_000);
    expect(cache.get("prj_a", 1_000 + LOOKUP_TTL_MS - 1)?.usedBytes).toBe(100);
    expect(cache.get("prj_a", 1_000 + LOOKUP_TTL_MS)).toBeNull();
    expect(cache.get("prj_a", 1_000)).toBeNull();
  });

  test("a stored duplicate is not remembered: it belongs to one message, not the project", () => {
    const cache = new RecentProjectLookups();
    cache.set("prj_a", lookup({ duplicatePk: "msg_1" }), 0);
    expect(cache.get("prj_a", 1)?.duplicatePk).toBeNull();
  });

  test("updateUsage records the usage the store statement returned and keeps the expiry", () => {
    const cache = new RecentProjectLookups();
    cache.set("prj_a", lookup(), 0);
    cache.updateUsage("prj_a", 4_000);
    cache.updateUsage("prj_unknown", 1);
    expect(cache.get("prj_a", LOOKUP_TTL_MS - 1)?.usedBytes).toBe(4_000);
    expect(cache.get("prj_a", LOOKUP_TTL_MS)).toBeNull();
    expect(cache.get("prj_unknown", 0)).toBeNull();
  });

  test("delete forgets one project only", () => {
    const cache = new RecentProjectLookups();
    cache.set("prj_a", lookup(), 0);
    cache.set("prj_b", lookup({ usedBytes: 7 }), 0);
    cache.delete("prj_a");
    expect(cache.get("prj_a", 1)).toBeNull();
    expect(cache.get("prj_b", 1)?.usedBytes).toBe(7);
  });
});
