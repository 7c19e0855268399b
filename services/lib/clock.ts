/** Time is injected so tests control it (STYLE habit 5). */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock tests can move. */
export function manualClock(
  start = new Date("2026-01-01T00:00:00Z"),
): Clock & { advance(ms: number): void; set(d: Date): void } {
  let t = start.getTime();
  return {
    now: () => new Date(t),
    advance(ms) {
      t += ms;
    },
    set(d) {
      t = d.getTime();
    },
  };
}

/** RFC 3339 UTC with milliseconds, as stored. */
export function iso(d: Date | null | undefined): string | null {
  return d ? d.toISOString() : null;
}
