/**
 * Loaded once, before the first test file (bunfig.toml). Keeps tests quiet and deterministic about their
 * environment, and cleans up after the whole run: a top-level `afterAll` in a preload runs once, after
 * the last test file (run-end.ts).
 */
import { afterAll, setDefaultTimeout } from "bun:test";
import { runEndOfRun } from "./run-end.ts";

process.env.MAILHOOK_LOG_LEVEL ??= "silent";
// Tests never ask the machine's resolver (it is not on loopback): services they start, in process or as
// child processes, make no DNS lookups unless a test points DNS_SERVERS at its own dnsmasq.
process.env.DNS_SERVERS ??= "none";
// Integration tests create databases and open real sockets; under load (CI on 2 cores) a fresh PGlite or
// a child process can take well over Bun's 5 s default. bunfig's [test] timeout does not reach hooks.
// Bun 1.4 keeps a preload's default for the first test file only (a known Bun bug), so .ci/run
// also passes `--timeout 60000`, which reaches every file.
setDefaultTimeout(60_000);

afterAll(runEndOfRun);
