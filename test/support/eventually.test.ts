/** The poll-until helper: what counts as an answer, the deadline, and what a timeout says. */
import { describe, expect, test } from "bun:test";
import { eventually } from "./eventually.ts";

describe("eventually", () => {
  test("returns the first answer that is not undefined, null or false", async () => {
    const answers = [undefined, null, false, 0, 1];
    let calls = 0;
    expect(await eventually("an answer", () => answers[calls++], 1000, { everyMs: 1 })).toBe(0);
    expect(calls).toBe(4);
  });

  test("with `until`, returns the first answer it accepts", async () => {
    let n = 0;
    const got = await eventually("three", async () => ++n, 1000, { everyMs: 1, until: (v) => v >= 3 });
    expect(got).toBe(3);
  });

  test("a timeout names what was awaited and prints the last answer", async () => {
    let n = 0;
    const error = await eventually("the count to reach 100", () => ({ count: ++n }), 30, {
      until: (v) => v.count >= 100,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(String(error)).toMatch(
      /^Error: timed out after 30 ms waiting for the count to reach 100; last answer: \{"count":\d+\}$/,
    );
  });

  test("probes once more after the deadline before failing", async () => {
    let calls = 0;
    const slow = async () => {
      calls++;
      await Bun.sleep(40);
      return calls >= 2 ? "ready" : undefined;
    };
    expect(await eventually("the second probe", slow, 20)).toBe("ready");
  });

  test("a probe's error fails at once, unless retryErrors makes it the last answer", async () => {
    let calls = 0;
    const failing = () => {
      calls++;
      throw new Error("not listening yet");
    };
    await expect(eventually("a socket", failing, 1000)).rejects.toThrow("not listening yet");
    expect(calls).toBe(1);
    await expect(eventually("a socket", failing, 20, { retryErrors: true, everyMs: 1 })).rejects.toThrow(
      /waiting for a socket; last answer: Error: not listening yet$/,
    );
    expect(calls).toBeGreaterThan(2);
  });

  test("cuts a long last answer", async () => {
    const error = await eventually("a short string", () => "x".repeat(10_000), 5, {
      until: (s) => s.length < 10,
    }).catch((e: unknown) => String(e));
    expect(error).toEndWith("… (10002 chars)");
  });
});
