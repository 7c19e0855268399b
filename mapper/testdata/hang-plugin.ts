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
