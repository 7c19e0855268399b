import { describe, expect, test } from "bun:test";
import {
  forbiddenImports,
  type ImportEdge,
  importCycles,
  importEdges,
  layerOf,
} from "../../tools/deps/check.ts";

const edge = (from: string, to: string): ImportEdge => ({ from, to, line: 1 });

describe("the dependency rule (tools/deps/rules.ts)", () => {
  const edges = importEdges();

  test("reads the imports of services/ and mapper/, type-only ones included", () => {
    expect(edges.length).toBeGreaterThan(300);
    expect(edges).toContainEqual(
      expect.objectContaining({ from: "services/context.ts", to: "services/config.ts" }),
    );
  });

  test("every file of services/ and mapper/ belongs to a layer", () => {
    const orphans = [...new Set(edges.map((e) => e.from))].filter((f) => !layerOf(f));
    expect(orphans).toEqual([]);
  });

  test("no import breaks the table", () => {
    expect(forbiddenImports(edges)).toEqual([]);
  });

  test("no file reaches itself through imports", () => {
    expect(importCycles(edges)).toEqual([]);
  });

  test.each([
    ["services/ingest/ingest.ts", "services/delivery/outcome.ts"],
    ["services/delivery/deliver.ts", "services/ingest/ingest.ts"],
    ["services/resources/routes.ts", "services/api/routes.ts"],
    ["services/api/app.ts", "services/ui/index.ts"],
    ["services/lib/ids.ts", "services/db/client.ts"],
    ["mapper/compile.ts", "services/lib/message.ts"],
    ["services/routing/rules.ts", "services/resources/routes.ts"],
  ])("refuses %s importing %s", (from, to) => {
    expect(forbiddenImports([edge(from, to)])).toHaveLength(1);
  });

  test("allows downward imports and the HTTP upload's api → ingest", () => {
    const ok = [
      edge("services/api/messages.ts", "services/ingest/ingest.ts"),
      edge("services/delivery/deliver.ts", "services/resources/endpoints.ts"),
      edge("services/ingest/ingest.ts", "services/mail/parse.ts"),
      edge("services/roles.ts", "services/ui/index.ts"),
    ];
    expect(forbiddenImports(ok)).toEqual([]);
  });

  test("finds a cycle through type-only imports as well as a direct one", () => {
    const cycles = importCycles([
      edge("a.ts", "b.ts"),
      edge("b.ts", "c.ts"),
      edge("c.ts", "a.ts"),
      edge("c.ts", "d.ts"),
    ]);
    expect(cycles).toEqual([["a.ts", "b.ts", "c.ts", "a.ts"]]);
  });
});
