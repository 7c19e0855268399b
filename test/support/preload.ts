// Loaded before every test file (bunfig.toml). Keeps tests quiet and deterministic about their environment.
process.env.MAILHOOK_LOG_LEVEL ??= "silent";
