/** Where the suite finds data outside the repository, and how a suite without it is named. */
import { afterEach, describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import { CORPUS_DIR, corpusPath, needsConformance, needsCorpus, REPO_ROOT, sharedDataDir } from "./paths.ts";

const saved = { ...process.env };
afterEach(() => {
  for (const name of ["MAILHOOK_CORPUS_DIR", "MAILHOOK_CONFORMANCE_DIR"]) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
});

describe("sharedDataDir (for tools)", () => {
  test("is the variable's directory, a relative one resolved against the repository root", () => {
    process.env.MAILHOOK_CORPUS_DIR = "../elsewhere/corpus";
    process.env.MAILHOOK_CONFORMANCE_DIR = "/abs/conformance";
    expect(sharedDataDir("corpus")).toBe(resolve(REPO_ROOT, "../elsewhere/corpus"));
    expect(sharedDataDir("conformance")).toBe("/abs/conformance");
  });

  test("falls back to shared/<data> beside the repository when the variable is unset or blank", () => {
    delete process.env.MAILHOOK_CORPUS_DIR;
    process.env.MAILHOOK_CONFORMANCE_DIR = "  ";
    expect(sharedDataDir("corpus")).toBe(resolve(REPO_ROOT, "..", "shared", "corpus"));
    expect(sharedDataDir("conformance")).toBe(resolve(REPO_ROOT, "..", "shared", "conformance"));
  });
});

describe("suites that need the corpus", () => {
  test("are named plainly when it is set, and with the variable that enables them when not", () => {
    const name = "parses every message";
    expect(needsCorpus(name)).toBe(CORPUS_DIR ? name : `${name} (skipped: set MAILHOOK_CORPUS_DIR to run)`);
    expect(needsConformance(name)).toMatch(
      /^parses every message( \(skipped: set MAILHOOK_CONFORMANCE_DIR to run\))?$/,
    );
  });

  test.skipIf(Boolean(CORPUS_DIR))("cannot read a corpus path when the variable is unset", () => {
    expect(() => corpusPath("emails")).toThrow("MAILHOOK_CORPUS_DIR is not set");
  });
});
