/**
 * Mapper REPL.
 *   bun tools/mapper-repl [--eml m.eml | --message-id ID [--project P]] [--config c.json] [--meta m.json]
 *   bun tools/mapper-repl --list [--project P]     the 20 newest stored messages, to pick an ID from
 * - `--eml`: a raw message, parsed by the service's own parser (what delivery would hand the mapper);
 * - `--message-id`: a message the service stored, by Message-ID (with or without `<>`, as
 *   `POST /v1/mapper/preview` takes it) or by its id (`msg_…`, as `--list` prints it), read from the service's
 *   database (`DATABASE_URL`, else the embedded one under `DATA_DIR`, which a running `serve` holds);
 * - with `--config` and `--run` (or stdin not a TTY): prints the mapper output JSON and exits (non-zero with
 *   the error on failure);
 * - otherwise interactive: type a JSON expression (one line) and see its value, or the error with its path,
 *   plus the number of nodes evaluated. `:vars` shows the config's vars with their values, `:message` the
 *   message, `:output` the config's output, `:quit` exits. `--interactive` forces this mode when stdin is
 *   piped.
 * An unknown option, or an option without its value, prints the usage and exits 64 (EX_USAGE).
 */
import { createInterface } from "node:readline";
import { compileMapper, MapperRuntimeError } from "../mapper/index.ts";
import type { MapperInput } from "../mapper/types.ts";
import { validateExpression } from "../mapper/validate.ts";
import { DatabaseLockedError, DatabaseUnavailableError } from "../services/db/client.ts";
import { emptyMessage, previewInput } from "../services/resources/mapper-preview.ts";
import {
  emlInput,
  InputError,
  listStored,
  REPL_NOW,
  readJsonFile,
  storedInput,
} from "./mapper-repl-input.ts";

/** Options that take a value, and flags. */
const VALUED = new Set(["--eml", "--message-id", "--project", "--config", "--meta"]);
const FLAGS = new Set(["--list", "--run", "--interactive", "--help", "-h"]);

/** The first problem with the command line, or null. */
function argvProblem(argv: readonly string[]): string | null {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (FLAGS.has(a)) continue;
    if (!VALUED.has(a)) return `unknown option ${JSON.stringify(a)}`;
    const value = argv[i + 1];
    if (value === undefined || (value.startsWith("--") && (VALUED.has(value) || FLAGS.has(value))))
      return `${a} needs a value`;
    i++;
  }
  return null;
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
}

async function loadInput(): Promise<MapperInput> {
  const emlPath = arg("eml");
  const messageId = arg("message-id");
  const metaPath = arg("meta");
  const meta = metaPath ? ((await readJsonFile(metaPath, "meta file")) as Record<string, unknown>) : {};
  if (emlPath !== undefined && messageId !== undefined) {
    throw new InputError("give --eml or --message-id, not both");
  }
  if (messageId !== undefined) return storedInput(messageId, arg("project"), meta);
  if (emlPath !== undefined) return emlInput(emlPath, meta);
  // No message: every field at its empty value, as the preview endpoint's default.
  const message = emptyMessage(new Date(REPL_NOW), { message_id: "<repl@mailhook.invalid>" });
  return previewInput(REPL_NOW, "repl", { message, rawSize: 0, source: "api" }, meta);
}

const USAGE = `usage:
  bun tools/mapper-repl [--eml m.eml | --message-id ID [--project P]] [--config c.json] [--meta m.json]
                        [--run | --interactive]
  bun tools/mapper-repl --list [--project P]

  --eml FILE        a raw message, parsed as the service parses it
  --message-id ID   a stored message: its Message-ID (with or without <>) or its msg_… id,
                    from DATABASE_URL, else the embedded database in DATA_DIR (stop serve first)
  --project P       the project to look in (needed when a Message-ID is in several)
                    (a Message-ID stored twice in one project with different bytes: pass a msg_… id)
  --list            the 20 newest stored messages (received, project, id, Message-ID, subject)
  --config FILE     a custom_json mapper config; with --run (or piped input) prints its output
  --meta FILE       the mapper's meta object (JSON)
  --interactive     type expressions even when stdin is piped

Without --config and --run it is interactive: type a JSON expression per line.`;

const HELP =
  ":load FILE (a config), :vars (their values), :output, :message, :help, :quit — expressions see the config's vars";

/**
 * A mapper error for a person: validation problems with their paths; a runtime error with where the run
 * stopped (`label` turns `/vars/<i>/expr` into words) and the nodes it had been charged.
 */
function describeError(err: unknown, label: (path: string) => string = (p) => p): string {
  if (err instanceof MapperRuntimeError) {
    if (err.details.length > 0)
      return `${err.code}:${err.details.map((d) => `\n  at ${d.path || "/"}: ${d.message}`).join("")}`;
    const where = err.path === undefined ? "" : `\n  at ${label(err.path)}, after ${err.nodes ?? 0} nodes`;
    return `${err.code}: ${err.message}${where}`;
  }
  return err instanceof Error ? err.message : String(err);
}

/** `/vars/2/expr` → `/vars/2/expr (var total)`, naming the config's var. */
function varLabel(vars: unknown[]): (path: string) => string {
  return (path) => {
    const i = /^\/vars\/(\d+)\/expr$/.exec(path)?.[1];
    const name = i === undefined ? undefined : (vars[Number(i)] as { name?: unknown } | undefined)?.name;
    return typeof name === "string" ? `${path} (var ${name})` : path;
  };
}

/** The config's vars with their values on `input`, one `name = value` line each. */
function showVars(vars: unknown[], input: MapperInput): string {
  if (vars.length === 0) return "no vars: start with --config FILE or type :load FILE";
  const values = compileMapper({ version: "v1", vars, output: { var: "vars" } })(input) as Record<
    string,
    unknown
  >;
  return vars
    .map((v) => {
      const name = String((v as { name?: unknown }).name);
      return `${name} = ${JSON.stringify(values[name] ?? null)}`;
    })
    .join("\n");
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
  let input: MapperInput;
  let config: Record<string, unknown> | undefined;
  if (process.argv.includes("--help") || process.argv.includes("-h")) {
    console.log(USAGE);
    return;
  }
  const problem = argvProblem(process.argv.slice(2));
  if (problem !== null) {
    console.error(`${problem}\n\n${USAGE}`);
    process.exit(64); // EX_USAGE
  }
  try {
    if (process.argv.includes("--list")) {
      const stored = await listStored(arg("project"));
      if (stored.length === 0) console.log("no stored messages");
      for (const m of stored) {
        console.log(`${m.receivedAt}  ${m.projectId}  ${m.id}  ${m.messageId}  ${m.subject}`);
      }
      return;
    }
    input = await loadInput();
    const configPath = arg("config");
    config = configPath ? ((await readJsonFile(configPath, "config")) as Record<string, unknown>) : undefined;
  } catch (err) {
    const expected =
      err instanceof InputError ||
      err instanceof DatabaseLockedError ||
      err instanceof DatabaseUnavailableError;
    if (!expected) throw err;
    console.error(err.message);
    process.exit(1);
  }
  const interactive =
    process.argv.includes("--interactive") || (process.stdin.isTTY && !process.argv.includes("--run"));
  if (config && !interactive) {
    try {
      console.log(JSON.stringify(compileMapper(config)(input), null, 2));
      return;
    } catch (err) {
      console.error(describeError(err, varLabel(Array.isArray(config.vars) ? config.vars : [])));
      process.exit(1);
    }
  }
  let vars = Array.isArray(config?.vars) ? (config.vars as unknown[]) : [];
  const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: process.stdin.isTTY });
  console.log(`mapper REPL — type a JSON expression; ${HELP}`);
  // Piped input can end while a command awaits (`:load`); the queued lines still run, without prompts.
  let closed = false;
  rl.on("close", () => {
    closed = true;
  });
  const prompt = () => {
    if (!closed) rl.prompt();
  };
  rl.setPrompt("> ");
  prompt();
  for await (const raw of rl) {
    const line = raw.trim();
    if (line === ":quit" || line === ":q") break;
    if (line === "") {
      prompt();
      continue;
    }
    try {
      if (line === ":help") console.log(HELP);
      else if (line === ":message") console.log(JSON.stringify(input.message, null, 2));
      else if (line === ":vars") console.log(showVars(vars, input));
      else if (line === ":output") {
        if (!config) console.log("no config loaded: start with --config FILE or type :load FILE");
        else console.log(JSON.stringify(compileMapper(config)(input), null, 2));
      } else if (line.startsWith(":load ")) {
        const loaded = (await readJsonFile(line.slice(6).trim(), "config")) as Record<string, unknown>;
        compileMapper(loaded); // an invalid config is reported (with its paths) and not loaded
        config = loaded;
        vars = Array.isArray(loaded.vars) ? (loaded.vars as unknown[]) : [];
        console.log(`loaded: ${vars.length} vars; expressions now see them as vars.<name>`);
      } else if (line.startsWith(":")) console.log(`unknown command ${line.split(/\s/)[0]}; ${HELP}`);
      else {
        const { value, nodes } = evaluate(JSON.parse(line), vars, input);
        console.log(JSON.stringify(value, null, 2), `  (${nodes} nodes)`);
      }
    } catch (err) {
      // The typed expression runs as one more var after the config's (see `evaluate`).
      const label = (path: string) =>
        path === `/vars/${vars.length}/expr` ? "the expression" : varLabel(vars)(path);
      console.log(`error: ${err instanceof InputError ? err.message : describeError(err, label)}`);
    }
    prompt();
  }
  rl.close();
}

await main();
