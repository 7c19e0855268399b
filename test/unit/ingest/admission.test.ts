import { describe, expect, test } from "bun:test";
import {
  AdmissionSlots,
  LARGE_BUDGET_PER_SLOT,
  LARGE_MESSAGE_BYTES,
  SMALL_MESSAGE_SLOTS,
} from "../../../services/ingest/admission.ts";

/** True when `p` has settled by the end of the current macrotask queue turn. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => {
    done = true;
  });
  await new Promise((r) => setImmediate(r));
  return done;
}

describe("AdmissionSlots", () => {
  test("large messages share a budget of INGEST_CONCURRENCY × 16 MiB, weighted by size", async () => {
    const slots = new AdmissionSlots(2);
    expect(slots.large.capacity).toBe(2 * LARGE_BUDGET_PER_SLOT);
    const first = await slots.acquire(20 * 1024 * 1024);
    const second = slots.acquire(20 * 1024 * 1024);
    expect(await settled(second)).toBe(false);
    first();
    expect(await settled(second)).toBe(true);
    (await second)();
    expect(slots.large.inUse).toBe(0);
  });

  test("small messages take their own slots, never the large budget", async () => {
    const slots = new AdmissionSlots(1);
    const large = await slots.acquire(LARGE_MESSAGE_BYTES);
    const releases = await Promise.all(
      Array.from({ length: SMALL_MESSAGE_SLOTS }, () => slots.acquire(LARGE_MESSAGE_BYTES - 1)),
    );
    expect(slots.small.inUse).toBe(SMALL_MESSAGE_SLOTS);
    expect(slots.large.inUse).toBe(LARGE_MESSAGE_BYTES);
    const oneMore = slots.acquire(10);
    expect(await settled(oneMore)).toBe(false);
    releases[0]?.();
    expect(await settled(oneMore)).toBe(true);
    large();
  });

  test("a message over the whole budget is clamped to it and parses alone", async () => {
    const slots = new AdmissionSlots(1);
    const huge = await slots.acquire(50 * 1024 * 1024);
    expect(slots.large.inUse).toBe(LARGE_BUDGET_PER_SLOT);
    const next = slots.acquire(LARGE_MESSAGE_BYTES);
    expect(await settled(next)).toBe(false);
    huge();
    (await next)();
  });
});
