/** Routes CRUD (docs/api.md, docs/routing.md). Rule and pipeline errors are 422 with JSON-pointer paths. */
import { Elysia, t } from "elysia";
import type { AppContext } from "../context.ts";
import { createRoute, deleteRoute, getRoute, listRoutes, updateRoute } from "../resources/routes.ts";
import { projectAuth } from "./auth.ts";
import { authErrors, ErrorBody, IdParam, Items, Route, RouteInput, validationErrors } from "./schemas.ts";

const security = [{ apiKey: [] }];

export function routesApi(ctx: AppContext) {
  return new Elysia({ tags: ["routes"] })
    .use(projectAuth(ctx))
    .get("/routes", async ({ auth }) => ({ items: await listRoutes(ctx, auth.projectId) }), {
      response: { 200: Items(Route), ...authErrors },
      detail: { summary: "List routes", security },
    })
    .post(
      "/routes",
      async ({ auth, body, status }) => status(201, await createRoute(ctx, auth.projectId, body)),
      {
        body: RouteInput,
        response: { 201: Route, ...authErrors, ...validationErrors },
        detail: {
          summary: "Create a route (rule: docs/routing.md; pipeline: map.generic_json by default)",
          security,
        },
      },
    )
    .get("/routes/:id", ({ auth, params }) => getRoute(ctx, auth.projectId, params.id), {
      params: IdParam,
      response: { 200: Route, 404: ErrorBody, ...authErrors },
      detail: { summary: "Get a route", security },
    })
    .patch("/routes/:id", ({ auth, params, body }) => updateRoute(ctx, auth.projectId, params.id, body), {
      params: IdParam,
      body: t.Partial(RouteInput),
      response: { 200: Route, 404: ErrorBody, ...authErrors, ...validationErrors },
      detail: { summary: "Update a route", security },
    })
    .delete(
      "/routes/:id",
      async ({ auth, params, set }) => {
        await deleteRoute(ctx, auth.projectId, params.id);
        set.status = 204;
      },
      {
        params: IdParam,
        response: { 204: t.Void(), 404: ErrorBody, ...authErrors },
        detail: { summary: "Delete a route", security },
      },
    );
}
