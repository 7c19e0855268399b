/**
 * The dashboard: server-rendered pages under `/ui`, mounted beside `/v1` by `createHttpApp` (http.ts).
 * No build step — HTML from template literals (`html.ts`), one stylesheet and small scripts served
 * from `assets/` (and the Overview's chart library from its npm package). Sign-in, sessions and CSRF are in `session.ts` and `guard.ts`; pages in `pages/`.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Elysia } from "elysia";
import type { AppContext } from "../context.ts";
import { dashboardBodyParser } from "./body.ts";
import { domainPages } from "./pages/domains.ts";
import { endpointPages } from "./pages/endpoints.ts";
import { eventDetailPages } from "./pages/event-detail.ts";
import { eventListPages } from "./pages/events.ts";
import { heldPages } from "./pages/held.ts";
import { mailboxPages } from "./pages/mailboxes.ts";
import { messagePages } from "./pages/messages.ts";
import { notificationPages } from "./pages/notifications.ts";
import { overviewPages } from "./pages/overview.ts";
import { playgroundPages } from "./pages/playground.ts";
import { routePages } from "./pages/routes.ts";
import { signInPages } from "./pages/sign-in.ts";
import { signingSecretPages } from "./pages/signing-secrets.ts";
import { redirect, securityHeaders } from "./respond.ts";

/** uPlot, the Overview's chart library (pinned in package.json), served from the package itself. */
const UPLOT_DIST = join(dirname(createRequire(import.meta.url).resolve("uplot/package.json")), "dist");

const ASSETS: Record<string, { body: string; type: string }> = {
  "uplot.js": {
    body: readFileSync(join(UPLOT_DIST, "uPlot.iife.min.js"), "utf8"),
    type: "text/javascript; charset=utf-8",
  },
  "uplot.css": {
    body: readFileSync(join(UPLOT_DIST, "uPlot.min.css"), "utf8"),
    type: "text/css; charset=utf-8",
  },
  "route-editor.js": {
    body: readFileSync(join(import.meta.dir, "assets", "route-editor.js"), "utf8"),
    type: "text/javascript; charset=utf-8",
  },
  "overview.js": {
    body: readFileSync(join(import.meta.dir, "assets", "overview.js"), "utf8"),
    type: "text/javascript; charset=utf-8",
  },
  "app.css": {
    body: readFileSync(join(import.meta.dir, "assets", "app.css"), "utf8"),
    type: "text/css; charset=utf-8",
  },
  "app.js": {
    body: readFileSync(join(import.meta.dir, "assets", "app.js"), "utf8"),
    type: "text/javascript; charset=utf-8",
  },
};

/** The dashboard plugin: every page and asset under `/ui`. */
export function uiApp(ctx: AppContext) {
  return new Elysia({ prefix: "/ui" })
    .onParse(dashboardBodyParser(ctx))
    .get("/", () => redirect("/ui/overview"))
    .get("/assets/:name", ({ params }) => {
      const asset = ASSETS[params.name];
      if (!asset) return new Response("not found", { status: 404, headers: securityHeaders() });
      return new Response(asset.body, {
        headers: { ...securityHeaders(), "content-type": asset.type, "cache-control": "no-cache" },
      });
    })
    .use(signInPages(ctx))
    .use(overviewPages(ctx))
    .use(eventListPages(ctx))
    .use(eventDetailPages(ctx))
    .use(heldPages(ctx))
    .use(routePages(ctx))
    .use(endpointPages(ctx))
    .use(signingSecretPages(ctx))
    .use(notificationPages(ctx))
    .use(domainPages(ctx))
    .use(mailboxPages(ctx))
    .use(messagePages(ctx))
    .use(playgroundPages(ctx));
}
