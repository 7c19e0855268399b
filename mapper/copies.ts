/**
 * One copy of the evaluator's code per var position.
 *
 * JavaScriptCore compiles, profiles and caches code per function body, not per closure. Every `in` node of
 * every var runs the same body, so in a mapper with many vars each property read and call site inside the
 * operators sees every var's data: the keyed reads go megamorphic (≈ 8–10 ns a read instead of ≈ 1.5 ns) and
 * calls between nodes are not inlined. json-logic-engine does not pay this: it generates one function per
 * expression. We may not generate code (no `eval`, no `new Function`), but we may load the same code more
 * than once. The repository's own source files (`compiler.ts`, `guards.ts` and `operators/*`) are loaded
 * again, unchanged, as separate module instances under the `mapper-copy:` namespace of a Bun plugin. Each
 * instance has function bodies of its own, which the JIT profiles, specialises and inlines for the vars that
 * use it. The config never becomes code, and the copies are byte for byte the reviewed files.
 *
 * Var `i` of a mapper is compiled by copy `1 + i mod N`, and its output template by the copy after the last
 * var's; copy 0 is the ordinary module, used by `compileExpression`. Modules with state that must exist once
 * per process (the error classes, the function registry, the regex cache, validation) are not copied:
 * imports of them from a copy resolve to the ordinary module. Copies load per thread (each pool worker has
 * its own): at start through `loadCodeCopies` (pool workers and the service do), else on first use.
 *
 * N is `setCodeCopies(n)` (default 8, at most 64; 0 turns copies off), per thread: the pool passes its
 * `codeCopies` option to each worker, and the service sets both from `MAPPER_CODE_COPIES`. Why, and the
 * measurements: docs/design/mapper-performance.md ("One copy of the evaluator's code per var position").
 */
import { readFileSync } from "node:fs";
import { dirname, join, resolve, sep } from "node:path";
import * as ordinary from "./compiler.ts";

/** What a copy exports: the compiler and its template registry. */
type Code = typeof ordinary;

const NAMESPACE = "mapper-copy";
export const DEFAULT_CODE_COPIES = 8;
export const MAX_CODE_COPIES = 64;

let copies = DEFAULT_CODE_COPIES;

/**
 * Sets how many copies this thread's later compilations spread their vars over (mappers already compiled
 * keep theirs). Throws a RangeError outside 0–MAX_CODE_COPIES.
 */
export function setCodeCopies(n: number): void {
  copies = checkCodeCopies(n);
}

/** The number of copies this thread's compilations use now. */
export function codeCopies(): number {
  return copies;
}

/** `n` when it is a valid number of copies; else a RangeError. */
export function checkCodeCopies(n: number): number {
  if (!Number.isInteger(n) || n < 0 || n > MAX_CODE_COPIES) {
    throw new RangeError(`code copies must be an integer from 0 to ${MAX_CODE_COPIES} (got ${n})`);
  }
  return n;
}

const DIR = import.meta.dir;
const OPERATORS_DIR = join(DIR, "operators") + sep;

/** True for the files each copy gets its own instance of: the evaluator, stateless apart from WeakMap tags. */
function isCopied(file: string): boolean {
  return (
    file === join(DIR, "compiler.ts") || file === join(DIR, "guards.ts") || file.startsWith(OPERATORS_DIR)
  );
}

let registered = false;

/**
 * Registers the loader once per thread. A specifier `mapper-copy:<k>|<file>` loads `file` as copy `k`; a
 * relative import from inside copy `k` stays in copy `k` when its target is copied, else it resolves to
 * the ordinary module. Every other import in the process is left alone (the resolver returns nothing).
 */
function register(): void {
  if (registered) return;
  registered = true;
  Bun.plugin({
    name: "mailhook mapper code copies",
    setup(build) {
      build.onResolve({ filter: /^\.\.?\// }, (args) => {
        if (!args.importer.startsWith(`${NAMESPACE}:`)) return undefined;
        const bar = args.importer.indexOf("|");
        const from = args.importer.slice(bar + 1);
        // Another checkout of this library in the same process registers its own resolver.
        if (!from.startsWith(DIR + sep)) return undefined;
        const copy = args.importer.slice(NAMESPACE.length + 1, bar);
        const target = resolve(dirname(from), args.path);
        return isCopied(target) ? { path: `${copy}|${target}`, namespace: NAMESPACE } : { path: target };
      });
      build.onLoad({ filter: /.*/, namespace: NAMESPACE }, (args) => ({
        contents: readFileSync(args.path.slice(args.path.indexOf("|") + 1), "utf8"),
        loader: "ts",
      }));
    },
  });
}

const loaded: Code[] = [];

/** Copy `k` (1-based) of `compiler.ts` and the operators, loaded synchronously on first use. */
function copy(k: number): Code {
  const hit = loaded[k];
  if (hit !== undefined) return hit;
  register();
  const module = require(`${NAMESPACE}:${k}|${join(DIR, "compiler.ts")}`) as Code;
  loaded[k] = module;
  return module;
}

/**
 * Loads every copy this thread uses now, instead of on first use: a worker or a service calls it at start,
 * so a copy that cannot load fails there (not in the middle of a task, against its deadline), and every
 * copy is the code the process started with. Throws an Error naming the copy that failed.
 */
export function loadCodeCopies(): void {
  for (let k = 1; k <= copies; k++) {
    try {
      copy(k);
    } catch (err) {
      throw new Error(`copy ${k} of the mapper's evaluator code did not load: ${(err as Error).message}`);
    }
  }
}

/**
 * The evaluator code for `position` of a mapper (var `i` is position `i`, the output comes after the
 * last var): the copy that position uses, or the ordinary module when copies are off.
 */
export function codeFor(position: number): Code {
  return copies === 0 ? ordinary : copy(1 + (position % copies));
}
