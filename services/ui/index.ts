/**
 * The dashboard: server-rendered pages under `/ui`, mounted beside `/v1` by `createHttpApp` (http.ts).
 * No build step — HTML from template literals (`html.ts`), one stylesheet and one small script served
 * from `assets/`. Sign-in, sessions and CSRF are in `session.ts` and `guard.ts`; pages in `pages/`.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Elysia } from "elysia";
import type { AppContext } from "../context.ts";
import { endpointPages } from "./pages/endpoints.ts";
import { eventDetailPages } from "./pages/event-detail.ts";
import { eventListPages } from "./pages/events.ts";
import { mailboxPages } from "./pages/mailboxes.ts";
import { playgroundPages } from "./pages/playground.ts";
import { routePages } from "./pages/routes.ts";
import { signInPages } from "./pages/sign-in.ts";
import { signingSecretPages } from "./pages/signing-secrets.ts";
import { redirect, securityHeaders } from "./respond.ts";

const ASSETS: Record<string, { body: string; type: string }> = {
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
    .get("/", () => redirect("/ui/events"))
    .get("/assets/:name", ({ params }) => {
      const asset = ASSETS[params.name];
      if (!asset) return new Response("not found", { status: 404, headers: securityHeaders() });
      return new Response(asset.body, {
        headers: { ...securityHeaders(), "content-type": asset.type, "cache-control": "no-cache" },
      });
    })
    .use(signInPages(ctx))
    .use(eventListPages(ctx))
    .use(eventDetailPages(ctx))
    .use(routePages(ctx))
    .use(endpointPages(ctx))
    .use(signingSecretPages(ctx))
    .use(mailboxPages(ctx))
    .use(playgroundPages(ctx));
}
