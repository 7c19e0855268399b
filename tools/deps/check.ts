/**
 * Checks the import graph of `services/` and `mapper/` against the table in rules.ts: every import
 * (type-only ones included) must go to the file's own layer or one it may import, and no file may
 * reach itself through imports. Prints each problem and exits 1 when there is one.
 *
 *   bun tools/deps/check.ts
 */
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { Glob } from "bun";
import { LAYERS, type Layer } from "./rules.ts";

const ROOT = resolve(import.meta.dir, "../..");

/** One relative import of a source file: the imported file (relative to the root) and its line. */
export interface ImportEdge {
  from: string;
  to: string;
  line: number;
}

// `import … from "x"`, `export … from "x"`, `import "x"`, `import("x")`; type-only forms included.
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(?\s*)["'](\.\.?\/[^"']+)["']/g;

/** The relative imports of the non-test source files under `services/` and `mapper/`. */
export function importEdges(root = ROOT): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const file of new Glob("{services,mapper}/**/*.ts").scanSync(root)) {
    if (file.endsWith(".test.ts")) continue;
    const lines = readFileSync(join(root, file), "utf8").split("\n");
    lines.forEach((text, i) => {
      if (/^\s*(\*|\/\/)/.test(text)) return; // comment lines may quote code
      for (const m of text.matchAll(SPECIFIER)) {
        edges.push({
          from: file,
          to: relative(root, resolve(root, dirname(file), m[1] as string)),
          line: i + 1,
        });
      }
    });
  }
  return edges;
}

/** The layer a repository path belongs to, or undefined outside `services/` and `mapper/`. */
export function layerOf(path: string): Layer | undefined {
  return LAYERS.find((l) => l.paths.some((p) => (p.endsWith("/") ? path.startsWith(p) : path === p)));
}

/** Imports that break the table, as readable lines. */
export function forbiddenImports(edges: readonly ImportEdge[]): string[] {
  const problems: string[] = [];
  for (const e of edges) {
    const from = layerOf(e.from);
    if (!from) continue;
    const to = layerOf(e.to);
    if (!to) {
      if (e.to.startsWith("services/"))
        problems.push(`${e.from}:${e.line} imports ${e.to}, which is in no layer`);
      continue;
    }
    if (to.name !== from.name && !from.mayImport.includes(to.name)) {
      problems.push(
        `${e.from}:${e.line} (${from.name}) imports ${e.to} (${to.name}): ${from.name} may import ${from.mayImport.join(", ") || "nothing outside itself"}`,
      );
    }
  }
  return problems;
}

/** File-level import cycles (type-only imports count), each as the chain of files. */
export function importCycles(edges: readonly ImportEdge[]): string[][] {
  const next = new Map<string, Set<string>>();
  for (const e of edges) (next.get(e.from) ?? next.set(e.from, new Set()).get(e.from))?.add(e.to);
  const cycles: string[][] = [];
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (file: string) => {
    state.set(file, "open");
    stack.push(file);
    for (const to of next.get(file) ?? []) {
      if (state.get(to) === "open") cycles.push([...stack.slice(stack.indexOf(to)), to]);
      else if (!state.has(to)) visit(to);
    }
    stack.pop();
    state.set(file, "done");
  };
  for (const file of [...next.keys()].sort()) if (!state.has(file)) visit(file);
  return cycles;
}

if (import.meta.main) {
  const edges = importEdges();
  const problems = [
    ...forbiddenImports(edges),
    ...importCycles(edges).map((c) => `import cycle: ${c.join(" → ")}`),
  ];
  for (const p of problems) console.error(p);
  console.log(`dependency check: ${edges.length} imports, ${problems.length} problems`);
  process.exit(problems.length === 0 ? 0 : 1);
}
