/**
 * Mapper REPL. `bun tools/mapper-repl.ts [--eml m.eml] [--config c.json] [--meta meta.json]`
 * - with `--config` and `--run` (or stdin not a TTY): prints the mapper output JSON and exits (non-zero with the
 *   error on failure);
 * - otherwise interactive: type a JSON expression (one line) and see its value, or the error with its path,
 *   plus the number of nodes evaluated. `:vars` shows the config's vars, `:message` the parsed message,
 *   `:quit` exits. `--interactive` forces this mode when stdin is piped.
 * The stored-message mode (`--message-id`) is not offered: the mapper library must not reach the database.
 */
import { createInterface } from "node:readline";
import { compileMapper, MapperRuntimeError } from "../mapper/index.ts";
import type { MapperInput, MapperMessage } from "../mapper/types.ts";
import { validateExpression } from "../mapper/validate.ts";
import { parseEml } from "./mapper-repl-eml.ts";

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
}

const emptyMessage: MapperMessage = {
  message_id: "",
  subject: "",
  from: [],
  to: [],
  headers: {},
  text: "",
  html: "",
  attachments: [],
};

async function loadInput(): Promise<MapperInput> {
  const emlPath = arg("eml");
  const metaPath = arg("meta");
  const message = emlPath
    ? await parseEml(new Uint8Array(await Bun.file(emlPath).arrayBuffer()))
    : emptyMessage;
  const meta = metaPath ? ((await Bun.file(metaPath).json()) as Record<string, unknown>) : {};
  // ctx.now is fixed so that REPL output is reproducible.
  return {
    message,
    ctx: { project_id: "repl", route_id: "repl", source_type: "api", now: "2025-01-01T00:00:00Z" },
    meta,
  };
}

function describeError(err: unknown): string {
  if (err instanceof MapperRuntimeError) {
    if (err.details.length === 0) return `${err.code}: ${err.message}`;
    return `${err.code}:${err.details.map((d) => `\n  at ${d.path || "/"}: ${d.message}`).join("")}`;
  }
  return err instanceof Error ? err.message : String(err);
}

/** Evaluates one expression with the config's vars in scope; reports value and nodes evaluated. */
function evaluate(expr: unknown, vars: unknown[], input: MapperInput): { value: unknown; nodes: number } {
  const problems = validateExpression(expr);
  if (problems.length > 0)
    throw new MapperRuntimeError("mapper.invalid_config", "invalid expression", problems);
  const probe = { version: "v1", vars: [...vars, { name: "__out", expr }], output: { var: "vars.__out" } };
  const base = { version: "v1", vars, output: null };
  const withExpr = { nodes: 0 };
  const varsOnly = { nodes: 0 };
  const value = compileMapper(probe)(input, withExpr);
  compileMapper(base)(input, varsOnly);
  // minus the vars themselves and the one `var` node that reads the result
  return { value, nodes: withExpr.nodes - varsOnly.nodes - 1 };
}

async function main(): Promise<void> {
  const input = await loadInput();
  const configPath = arg("config");
  const config = configPath ? ((await Bun.file(configPath).json()) as Record<string, unknown>) : undefined;
  const interactive =
    process.argv.includes("--interactive") || (process.stdin.isTTY && !process.argv.includes("--run"));
  if (config && !interactive) {
    try {
      console.log(JSON.stringify(compileMapper(config)(input), null, 2));
      return;
    } catch (err) {
      console.error(describeError(err));
      process.exit(1);
    }
  }
  const vars = Array.isArray(config?.vars) ? (config.vars as unknown[]) : [];
  const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: process.stdin.isTTY });
  console.log("mapper REPL — type a JSON expression, :message, :vars, :output, :quit");
  rl.setPrompt("> ");
  rl.prompt();
  for await (const raw of rl) {
    const line = raw.trim();
    if (line === ":quit" || line === ":q") break;
    if (line === "") {
      rl.prompt();
      continue;
    }
    try {
      if (line === ":message") console.log(JSON.stringify(input.message, null, 2));
      else if (line === ":vars") console.log(JSON.stringify(vars, null, 2));
      else if (line === ":output" && config)
        console.log(JSON.stringify(compileMapper(config)(input), null, 2));
      else {
        const { value, nodes } = evaluate(JSON.parse(line), vars, input);
        console.log(JSON.stringify(value, null, 2), `  (${nodes} nodes)`);
      }
    } catch (err) {
      console.log(`error: ${describeError(err)}`);
    }
    rl.prompt();
  }
  rl.close();
}

await main();
