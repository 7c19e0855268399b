// Loaded before every test file (bunfig.toml). Keeps tests quiet and deterministic about their environment.
import { setDefaultTimeout } from "bun:test";

process.env.MAILHOOK_LOG_LEVEL ??= "silent";
// Integration tests create databases and open real sockets; under load (CI on 2 cores) a fresh PGlite or
// a child process can take well over Bun's 5 s default. bunfig's [test] timeout does not reach hooks.
setDefaultTimeout(60_000);
