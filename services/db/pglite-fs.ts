/**
 * PGlite's directory storage, kept private to the service's user. PGlite runs Postgres over
 * Emscripten's NODEFS, which creates each file and then sets its mode with chmod(2) — 0666 for the
 * files of a new database, 0644 for the relation cache files rewritten at every open — and chmod
 * ignores the process umask. So the mode change itself is filtered: every mode PGlite sets on disk
 * loses its group and other bits (services/lib/private-files.ts), and files and directories come out
 * 0600 and 0700 as the rest of DATA_DIR (docs/operations.md#the-data-directory).
 *
 * This reaches into PGlite's Emscripten module (`NODEFS.node_ops.setattr` and
 * `NODEFS.stream_ops.setattr`, the two places its chmod goes through); when a PGlite version no longer
 * has them the filter is skipped rather than breaking the database, and test/integration/
 * data-dir-modes.test.ts fails on the files left open.
 */
import type { PGlite } from "@electric-sql/pglite";
import { NodeFS } from "@electric-sql/pglite/nodefs";
import { privateMode } from "../lib/private-files.ts";

type InitOptions = Parameters<NodeFS["init"]>[1];
type Module = Parameters<NonNullable<InitOptions["preRun"]>[number]>[0];
/** The part of an Emscripten node or stream `setattr` the filter needs. */
type SetAttr = (target: unknown, attr: { mode?: number | null }) => unknown;
interface Ops {
  setattr?: SetAttr;
}

/** Wraps `ops.setattr` so that a mode it sets never has group or other bits. */
function filterModes(ops: Ops | undefined): void {
  const setattr = ops?.setattr;
  if (!ops || typeof setattr !== "function") return;
  ops.setattr = (target, attr) =>
    setattr(target, typeof attr.mode === "number" ? { ...attr, mode: privateMode(attr.mode) } : attr);
}

/** PGlite's `NodeFS` (a database in a directory) whose files are 0600 and directories 0700. */
export class PrivateNodeFS extends NodeFS {
  override async init(pg: PGlite, opts: InitOptions) {
    const restrict = (mod: Module) => {
      const nodefs = mod.NODEFS as unknown as { node_ops?: Ops; stream_ops?: Ops };
      filterModes(nodefs.node_ops);
      filterModes(nodefs.stream_ops);
    };
    // Before NodeFS's own step, which mounts the directory: no file is created before the filter.
    return super.init(pg, { ...opts, preRun: [restrict, ...(opts.preRun ?? [])] });
  }
}
