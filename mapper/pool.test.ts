import { afterAll, describe, expect, test } from "bun:test";
import { MapperRuntimeError } from "./errors.ts";
import { createMapperPool } from "./pool.ts";

const pool = createMapperPool({
  size: 1,
  taskTimeoutMs: 1500,
  plugins: [new URL("./testdata/hang-plugin.ts", import.meta.url).href],
});
afterAll(() => pool.close());

const input = { message: { subject: "hi" } as never, ctx: { now: "2025-01-01T00:00:00Z" } };
const config = { version: "v1", output: { s: { "string.upper": { var: "message.subject" } } } };

describe("createMapperPool", () => {
  test("runs a mapper in a worker", async () => {
    expect(await pool.run(config, input)).toEqual({ s: "HI" });
  });

  test("reports guard failures as MapperRuntimeError with the code", async () => {
    const err = await pool
      .run({ version: "v1", output: { "+": 1 } }, input)
      .catch((e: MapperRuntimeError) => e);
    expect(err).toBeInstanceOf(MapperRuntimeError);
    expect((err as MapperRuntimeError).code).toBe("mapper.invalid_config");
  });

  test("a guard error keeps where the run stopped across the thread boundary", async () => {
    const big = Array.from({ length: 6000 }, (_, i) => i);
    const err = await pool
      .run(
        {
          version: "v1",
          vars: [{ name: "a", expr: { map: [{ var: "meta.big" }, { var: "" }] } }],
          output: 1,
        },
        { ...input, meta: { big } },
      )
      .catch((e: MapperRuntimeError) => e);
    expect(err).toBeInstanceOf(MapperRuntimeError);
    expect(err as MapperRuntimeError).toMatchObject({ code: "mapper.nodes_exceeded", path: "/vars/0/expr" });
    expect((err as MapperRuntimeError).nodes).toBeGreaterThan(10_000);
  });

  test("the deadline counts a task's own run, not its wait for the thread (a burst on one thread)", async () => {
    // 24 tasks of 80 ms on one thread: the last waits about 1.9 s, past the 1.5 s deadline.
    const busy = { version: "v1", output: { "call.test.busy": { ms: 80 } } };
    const results = await Promise.allSettled(Array.from({ length: 24 }, () => pool.run(busy, input)));
    expect(results.filter((r) => r.status === "rejected")).toEqual([]);
    expect(results.map((r) => (r as PromiseFulfilledResult<unknown>).value)).toEqual(Array(24).fill(80));
  });

  test("a runaway task is cut at the deadline with mapper.call_timeout and the worker is replaced", async () => {
    const err = await pool
      .run({ version: "v1", output: { "call.test.hang": {} } }, input)
      .catch((e: MapperRuntimeError) => e);
    expect(err).toBeInstanceOf(MapperRuntimeError);
    expect((err as MapperRuntimeError).code).toBe("mapper.call_timeout");
    expect(await pool.run(config, input)).toEqual({ s: "HI" });
  });

  test("compiles a config once per worker, not per task", async () => {
    const fresh = { version: "v1", output: { n: 1, tag: "compile-once" } };
    const before = { ...pool.stats };
    for (let i = 0; i < 20; i++) expect(await pool.run(fresh, input)).toEqual({ n: 1, tag: "compile-once" });
    expect(pool.stats.tasks - before.tasks).toBe(20);
    expect(pool.stats.compilations - before.compilations).toBe(1);
  });
});
