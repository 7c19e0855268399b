/**
 * The quick modes of the fuzzers for CI: MIME messages into both intakes, random
 * JSON into every API operation, random mapper configs over hostile data. The seed is random per run
 * and printed (set `FUZZ_SEED` to replay one); a failure lists the broken invariants with their inputs.
 * Databases: the first of `MAILHOOK_TEST_DBS` (Postgres is faster for this volume when available).
 */
import { describe, expect, test } from "bun:test";
import { run as fuzzApi } from "../../tools/chaos/fuzz-api.ts";
import { run as fuzzMapper } from "../../tools/chaos/fuzz-mapper.ts";
import { run as fuzzMime } from "../../tools/chaos/fuzz-mime.ts";
import { testDbKinds } from "../support/db.ts";
import { CORPUS_DIR, needsCorpus } from "../support/paths.ts";

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
const kinds = testDbKinds();
const db = kinds.includes("postgres") ? "postgres" : "pglite";

describe(`fuzzing, quick modes (seed ${SEED}, FUZZ_SEED=${SEED} to replay)`, () => {
  test.skipIf(!CORPUS_DIR)(
    needsCorpus(
      "mutated corpus messages into POST /v1/messages and SMTP: no 500, no hang, ingest.* rejections, accepted ones stored",
    ),
    async () => {
      const r = await fuzzMime({ messages: 300, seed: SEED, db });
      const failures = r.failures.map(({ raw: _raw, ...f }) => f);
      expect(failures, JSON.stringify(failures, null, 1).slice(0, 4000)).toEqual([]);
      expect(r.accepted).toBeGreaterThan(100);
    },
    240_000,
  );

  test("random JSON into every API operation: no 500, no hang, documented error bodies", async () => {
    const r = await fuzzApi({ requests: 500, seed: SEED, db });
    expect(r.failures, JSON.stringify(r.failures, null, 1).slice(0, 4000)).toEqual([]);
    expect(r.operations).toBeGreaterThan(25);
  }, 180_000);

  test("random mapper configs: the validator never throws, valid configs run within bounds and throw only MapperRuntimeError", async () => {
    const r = await fuzzMapper({ runs: 400, seed: SEED });
    expect(r.failures, JSON.stringify(r.failures, null, 1).slice(0, 4000)).toEqual([]);
    expect(r.ran).toBeGreaterThan(50);
  }, 120_000);
});
