/** Test-only plugin: `call.test.hang` never returns, to prove the pool's hard deadline replaces the worker. */
import { registerFunction } from "../functions/registry.ts";

registerFunction("test.hang", {
  description: "spins forever (tests only)",
  args: {},
  run() {
    for (;;) {
      // busy loop: not interruptible from inside the worker
    }
  },
});

/** Test-only: `call.test.busy` spins for `ms` milliseconds (under the 100 ms call budget), then returns them. */
registerFunction("test.busy", {
  description: "spins for ms milliseconds (tests only)",
  args: { ms: { type: "number", description: "how long to spin" } },
  run(args) {
    const ms = typeof args.ms === "number" ? args.ms : 0;
    const until = performance.now() + ms;
    while (performance.now() < until) {
      // busy
    }
    return ms;
  },
});
