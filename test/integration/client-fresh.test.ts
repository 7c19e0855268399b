/**
 * CI goes red when the committed client is stale: `bun tools/gen-client --check` rebuilds the OpenAPI
 * document in-process and compares it (and the generated types) with `clients/ts/`.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";

test("the committed typed client matches the live /v1/openapi.json", async () => {
  const proc = Bun.spawn([process.execPath, "tools/gen-client.ts", "--check"], {
    cwd: join(import.meta.dir, "..", ".."),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  expect(code, `${out}${err}`).toBe(0);
}, 60_000);
