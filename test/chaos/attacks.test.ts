/**
 * CI quick mode of the attack suite (tools/chaos/attacks.ts), run as an operator runs it — a separate
 * process that starts its own `serve` children — once per database of `MAILHOOK_TEST_DBS`. Every line
 * must be `safe` (or `info`); on failure the whole report is printed, with the unsafe lines first.
 */
import { expect, test } from "bun:test";
import { resolve } from "node:path";
import { testDbKinds } from "../support/db.ts";

const REPO = resolve(import.meta.dir, "../..");

for (const db of testDbKinds()) {
  test(`every attack of docs/security.md, re-run against a running instance on ${db}, gets its safe outcome`, async () => {
    const child = Bun.spawn([process.execPath, "tools/chaos/attacks.ts", "--quick", "--db", db], {
      cwd: REPO,
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err, code] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ]);
    const lines = out.trimEnd().split("\n");
    const unsafe = lines.filter((l) => / (UNSAFE|ERROR)$/.test(l));
    expect({ code, unsafe }, `${out}\n${err}`).toEqual({ code: 0, unsafe: [] });
  }, 180_000);
}
