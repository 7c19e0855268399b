/**
 * Where tests and tools find data that is not part of the repository: the third-party email corpus
 * (`<corpus>/emails/<source>/…`) and the JsonLogic conformance suites (`<conformance>/jsonlogic/…`).
 *
 * Invariants:
 * - This is the only module that knows those locations; nothing else joins a path outside the
 *   repository.
 * - Tests read them only when `MAILHOOK_CORPUS_DIR` / `MAILHOOK_CONFORMANCE_DIR` are set; otherwise the
 *   suites that need them are reported as skipped, with a name saying which variable turns them on, so
 *   `bun test` on a fresh clone passes without them.
 * - A variable that is set is trusted: a wrong path fails the tests that read it, it never skips them.
 * - Relative values are resolved against the repository root (where `bun test` runs), not the cwd.
 * - Tools (benchmarks, fuzzers, the conformance report) fall back to a `shared/` folder beside the
 *   repository when the variable is unset, through `sharedDataDir`.
 */
import { readdirSync } from "node:fs";
import { join, resolve } from "node:path";

/** The repository root. */
export const REPO_ROOT = resolve(import.meta.dir, "../..");

/** The repository's own test fixtures (`test/fixtures`), always present. */
export const FIXTURES_DIR = join(REPO_ROOT, "test", "fixtures");

type SharedData = "corpus" | "conformance";

const VARIABLE: Record<SharedData, string> = {
  corpus: "MAILHOOK_CORPUS_DIR",
  conformance: "MAILHOOK_CONFORMANCE_DIR",
};

function fromEnvironment(data: SharedData): string | undefined {
  const value = process.env[VARIABLE[data]]?.trim();
  return value ? resolve(REPO_ROOT, value) : undefined;
}

/** The email corpus (holding `emails/`), from `MAILHOOK_CORPUS_DIR`; undefined when unset. */
export const CORPUS_DIR: string | undefined = fromEnvironment("corpus");

/** The conformance suites (holding `jsonlogic/`), from `MAILHOOK_CONFORMANCE_DIR`; undefined when unset. */
export const CONFORMANCE_DIR: string | undefined = fromEnvironment("conformance");

/**
 * The name of a suite or test that reads the corpus, saying how to enable it when `MAILHOOK_CORPUS_DIR`
 * is unset (it is skipped then): `describe.skipIf(!CORPUS_DIR)(needsCorpus("…"), …)`.
 */
export function needsCorpus(name: string): string {
  return CORPUS_DIR ? name : `${name} (skipped: set ${VARIABLE.corpus} to run)`;
}

/** The name of a suite or test that reads the conformance suites, marked like `needsCorpus` does. */
export function needsConformance(name: string): string {
  return CONFORMANCE_DIR ? name : `${name} (skipped: set ${VARIABLE.conformance} to run)`;
}

/** A path inside the corpus; only for suites skipped when `CORPUS_DIR` is unset (it throws then). */
export function corpusPath(...parts: string[]): string {
  if (!CORPUS_DIR) throw new Error(`${VARIABLE.corpus} is not set`);
  return join(CORPUS_DIR, ...parts);
}

/** Every message file of the corpus (`emails/**`, without the `.md` notes), sorted by path. */
export function corpusEmailFiles(): string[] {
  return readdirSync(corpusPath("emails"), { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile() && !d.name.endsWith(".md"))
    .map((d) => join(d.parentPath, d.name))
    .sort();
}

/** A path inside the conformance suites; only for suites skipped when `CONFORMANCE_DIR` is unset. */
export function conformancePath(...parts: string[]): string {
  if (!CONFORMANCE_DIR) throw new Error(`${VARIABLE.conformance} is not set`);
  return join(CONFORMANCE_DIR, ...parts);
}

/**
 * For tools: the directory from the environment variable, or `shared/<data>` beside the repository
 * (the layout of the development machine) when it is unset.
 */
export function sharedDataDir(data: SharedData): string {
  return fromEnvironment(data) ?? resolve(REPO_ROOT, "..", "shared", data);
}
