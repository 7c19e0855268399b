/**
 * The application the HTTP listener serves: the API (the ops probes and `/v1`) and, beside it, the
 * dashboard under `/ui`. Composed here, above both, so that neither imports the other.
 */
import { createApi } from "./api/app.ts";
import type { AppContext } from "./context.ts";
import { uiApp } from "./ui/index.ts";

/** The API and the dashboard as one Elysia app; `extra` is passed to {@link createApi}. */
export function createHttpApp(ctx: AppContext, extra: Parameters<typeof createApi>[1] = []) {
  return createApi(ctx, extra).use(uiApp(ctx));
}
