/**
 * Runs every JsonLogic conformance suite under `$MAILHOOK_CONFORMANCE_DIR/jsonlogic` through
 * `evaluateExpression`, limited to cases whose operators are all in the mapper's v1 set, and prints a
 * Markdown pass table (pasted into docs/mapper.md). `bun tools/conformance-report.ts` (without the
 * variable it reads the `shared/` folder beside the repository, see test/support/paths.ts).
 */
import { join } from "node:path";
import { Glob } from "bun";
import { evaluateExpression, MapperRuntimeError } from "../mapper/index.ts";
import { normalise, readCases, usesOnlyV1 } from "../mapper/testdata/conformance.ts";
import { sharedDataDir } from "../test/support/paths.ts";

const CONFORMANCE_DIR = join(sharedDataDir("conformance"), "jsonlogic");

interface Row {
  suite: string;
  total: number;
  v1: number;
  passed: number;
  failures: string[];
}

function passes(c: ReturnType<typeof readCases>[number]): boolean {
  try {
    const got = normalise(evaluateExpression(c.rule, c.data));
    // An expected error cannot pass: v1 operators turn errors into null instead of throwing.
    return !Object.hasOwn(c, "error") && Bun.deepEquals(got, normalise(c.result ?? null), true);
  } catch (err) {
    if (!(err instanceof MapperRuntimeError)) throw err;
    return false;
  }
}

const rows: Row[] = [];
const files = [...new Glob("**/*.json").scanSync(CONFORMANCE_DIR)].sort();
for (const file of files) {
  if (
    file.endsWith("index.json") ||
    file.includes("/results/") ||
    file.includes("bench-workloads") ||
    file.includes("rule_like")
  )
    continue;
  const cases = readCases(await Bun.file(`${CONFORMANCE_DIR}/${file}`).json());
  const v1 = cases.filter((c) => usesOnlyV1(c.rule) && !c.templating);
  const failures = v1.filter((c) => !passes(c)).map((c) => c.description);
  rows.push({
    suite: file,
    total: cases.length,
    v1: v1.length,
    passed: v1.length - failures.length,
    failures,
  });
}

const sum = (k: "total" | "v1" | "passed") => rows.reduce((a, r) => a + r[k], 0);
console.log("| suite | cases | v1-only cases | passed |");
console.log("|---|---:|---:|---:|");
for (const r of rows.filter((x) => x.v1 > 0))
  console.log(`| ${r.suite} | ${r.total} | ${r.v1} | ${r.passed} |`);
console.log(`| **total (suites with v1 cases)** | ${sum("total")} | ${sum("v1")} | ${sum("passed")} |`);
if (process.argv.includes("--failures")) {
  for (const r of rows) for (const f of r.failures) console.log(`FAIL ${r.suite}: ${f}`);
}
