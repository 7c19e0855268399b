/**
 * Test-only plugin: `call.test.code_copy` answers which copy of the evaluator called it (the `mapper-copy:`
 * module in its stack; 0 for the ordinary modules) and how many copies this thread uses.
 */
import { codeCopies } from "../copies.ts";
import { registerFunction } from "../functions/registry.ts";

registerFunction("test.code_copy", {
  description: "the copy of the evaluator that calls it (tests only)",
  args: {},
  run() {
    const copy = /mapper-copy:(\d+)\|/.exec(new Error().stack ?? "");
    return { copy: copy ? Number(copy[1]) : 0, copies: codeCopies() };
  },
});
