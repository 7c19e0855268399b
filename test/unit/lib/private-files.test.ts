import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "../../../services/lib/logger.ts";
import {
  type Chmod,
  makeDataDirPrivate,
  privateMode,
  tightenTree,
} from "../../../services/lib/private-files.ts";

let base: string;
beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), "mh-private-"));
});
afterEach(() => {
  rmSync(base, { recursive: true, force: true });
});

const modeOf = (path: string) => statSync(path).mode & 0o7777;

/** A file or directory at `path` with exactly `mode` (chmod, so the umask plays no part). */
function file(path: string, mode: number): string {
  writeFileSync(path, "x");
  chmodSync(path, mode);
  return path;
}
function dir(path: string, mode: number): string {
  mkdirSync(path);
  chmodSync(path, mode);
  return path;
}

/** An older version's data directory: 0755 directories, 0644/0666/0640 files, some already private. */
function oldLayout(root: string): void {
  chmodSync(root, 0o755);
  file(join(root, "secrets.key"), 0o600);
  dir(join(root, "pg"), 0o755);
  file(join(root, "pg", "PG_VERSION"), 0o666);
  dir(join(root, "pg", "base"), 0o700);
  file(join(root, "pg", "base", "1259"), 0o666);
  dir(join(root, "blobs"), 0o750);
  dir(join(root, "blobs", "sha256"), 0o2775);
  file(join(root, "blobs", "sha256", "blob"), 0o640);
  file(join(root, "readonly"), 0o400);
}

/** A logger that keeps its lines. */
function capture(): {
  logger: Logger;
  lines: { level: string; msg: string; fields: Record<string, unknown> }[];
} {
  const lines: { level: string; msg: string; fields: Record<string, unknown> }[] = [];
  const at =
    (level: string) =>
    (msg: string, fields: Record<string, unknown> = {}) =>
      lines.push({ level, msg, fields });
  const logger: Logger = {
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    child: () => logger,
  };
  return { logger, lines };
}

describe("privateMode", () => {
  test.each([
    ["a 0666 file", 0o100666, 0o100600],
    ["a 0644 file", 0o100644, 0o100600],
    ["a 0755 directory", 0o040755, 0o040700],
    ["a setgid 2775 directory", 0o042775, 0o040700],
    ["a 0600 file", 0o100600, 0o100600],
    ["a 0400 file", 0o100400, 0o100400],
  ])("%s keeps its type and owner bits only", (_label, mode, expected) => {
    expect(privateMode(mode)).toBe(expected);
  });
});

describe("tightenTree", () => {
  test("makes directories 0700 and files 0600, counts exactly the entries it changed", () => {
    const root = dir(join(base, "data"), 0o755);
    oldLayout(root);
    const result = tightenTree(root);
    expect(result.failures).toEqual([]);
    expect(result.refused).toBeUndefined();
    // root, pg, PG_VERSION, base/1259, blobs, blobs/sha256, blob; secrets.key, pg/base, readonly unchanged
    expect(result.tightened).toBe(7);
    for (const d of ["", "pg", "pg/base", "blobs", "blobs/sha256"]) expect(modeOf(join(root, d))).toBe(0o700);
    for (const f of ["secrets.key", "pg/PG_VERSION", "pg/base/1259", "blobs/sha256/blob"]) {
      expect(modeOf(join(root, f))).toBe(0o600);
    }
    expect(modeOf(join(root, "readonly"))).toBe(0o400); // already private: never given more
    expect(tightenTree(root).tightened).toBe(0); // a second start changes nothing
  });

  test("does not follow a symbolic link out of the tree, nor change it or its target", () => {
    const root = dir(join(base, "data"), 0o700);
    const outside = dir(join(base, "outside"), 0o755);
    const outsideFile = file(join(outside, "shared.txt"), 0o644);
    const lonely = file(join(base, "lonely.txt"), 0o666);
    symlinkSync(outside, join(root, "to-dir"));
    symlinkSync(lonely, join(root, "to-file"));
    symlinkSync(join(base, "missing"), join(root, "dangling"));
    const result = tightenTree(root);
    expect(result).toMatchObject({ tightened: 0, symlinksSkipped: 3, failures: [] });
    expect(modeOf(outside)).toBe(0o755);
    expect(modeOf(outsideFile)).toBe(0o644);
    expect(modeOf(lonely)).toBe(0o666);
    expect(lstatSync(join(root, "to-dir")).isSymbolicLink()).toBe(true);
  });

  test("a root that is a symbolic link (a volume elsewhere) walks its target", () => {
    const real = dir(join(base, "volume"), 0o755);
    file(join(real, "a"), 0o644);
    symlinkSync(real, join(base, "data"));
    const result = tightenTree(join(base, "data"));
    expect(result).toMatchObject({ root: real, tightened: 2, failures: [] });
    expect(modeOf(real)).toBe(0o700);
    expect(modeOf(join(real, "a"))).toBe(0o600);
  });

  test("reports what it cannot change with the path and code, and keeps walking below it", () => {
    const root = dir(join(base, "data"), 0o755);
    oldLayout(root);
    const foreign = new Set([root, join(root, "pg", "PG_VERSION")]);
    const chmod: Chmod = (path, mode) => {
      if (foreign.has(path)) {
        throw Object.assign(new Error(`EPERM: operation not permitted, chmod '${path}'`), { code: "EPERM" });
      }
      chmodSync(path, mode);
    };
    const result = tightenTree(root, chmod);
    expect(result.failures.map((f) => [f.path, f.code])).toEqual([
      [root, "EPERM"],
      [join(root, "pg", "PG_VERSION"), "EPERM"],
    ]);
    expect(result.tightened).toBe(5);
    expect(modeOf(root)).toBe(0o755);
    expect(modeOf(join(root, "pg", "base", "1259"))).toBe(0o600); // below the unchangeable root
  });

  test("refuses a shared directory (sticky bit, like /tmp) and a missing root, changing nothing", () => {
    const shared = dir(join(base, "shared"), 0o1777);
    const other = file(join(shared, "someone-elses"), 0o644);
    const result = tightenTree(shared);
    expect(result.refused).toContain("sticky bit");
    expect(result.tightened).toBe(0);
    expect(modeOf(shared)).toBe(0o1777);
    expect(modeOf(other)).toBe(0o644);
    expect(tightenTree(join(base, "nowhere")).refused).toContain("cannot be read");
    expect(tightenTree(file(join(base, "plain"), 0o644)).refused).toContain("not a directory");
  });
});

describe("makeDataDirPrivate", () => {
  test("logs one line with the count when it changed anything, and nothing when all was private", () => {
    const root = dir(join(base, "data"), 0o755);
    oldLayout(root);
    const first = capture();
    makeDataDirPrivate(root, first.logger);
    expect(first.lines).toEqual([
      { level: "info", msg: "data directory made private", fields: { dir: root, tightened: 7 } },
    ]);
    const second = capture();
    makeDataDirPrivate(root, second.logger);
    expect(second.lines).toEqual([]);
  });

  test("warns naming each path it cannot change, ten at most, then one line with the rest's count", () => {
    const root = dir(join(base, "data"), 0o700);
    for (let i = 0; i < 13; i++) file(join(root, `f${String(i).padStart(2, "0")}`), 0o644);
    const refuse: Chmod = (path) => {
      throw Object.assign(new Error(`EPERM: operation not permitted, chmod '${path}'`), { code: "EPERM" });
    };
    const { logger, lines } = capture();
    const result = makeDataDirPrivate(root, logger, refuse);
    expect(result.failures).toHaveLength(13);
    const warnings = lines.filter((l) => l.level === "warn");
    expect(warnings).toHaveLength(11);
    expect(warnings[0]).toMatchObject({ msg: "cannot make private", fields: { code: "EPERM" } });
    expect(String(warnings[0]?.fields.path)).toStartWith(join(root, "f"));
    expect(warnings[10]).toMatchObject({ msg: "cannot make private: more paths", fields: { more: 3 } });
    expect(lines.some((l) => l.level === "info")).toBe(false);
  });

  test("warns once, without touching anything, when DATA_DIR is a shared directory", () => {
    const shared = dir(join(base, "shared"), 0o1777);
    const { logger, lines } = capture();
    makeDataDirPrivate(shared, logger);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: "warn", msg: "data directory permissions left unchanged" });
  });
});
