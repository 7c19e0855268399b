/** Routes CRUD (docs/api.md, docs/routing.md). Rule and pipeline errors are 422 with JSON-pointer paths. */
import { Elysia, t } from "elysia";
import type { AppContext } from "../context.ts";
import { MapperWarningSchema, pipelineMapperWarnings } from "../resources/mapper-warnings.ts";
import { createRoute, deleteRoute, getRoute, listRoutes, updateRoute } from "../resources/routes.ts";
import { projectAuth } from "./auth.ts";
import { authErrors, ErrorBody, IdParam, Items, Route, RouteInput, validationErrors } from "./schemas.ts";

const security = [{ apiKey: [] }];

/**
 * Create and update answers: the route plus the near-miss warnings of its `map.custom_json` configs
 * (docs/mapper.md, "Warnings"); empty when there are none or the pipeline was not sent.
 */
const RouteSaved = t.Composite([Route, t.Object({ warnings: t.Array(MapperWarningSchema) })]);

export function routesApi(ctx: AppContext) {
  return new Elysia({ tags: ["routes"] })
    .use(projectAuth(ctx))
    .get("/routes", async ({ auth }) => ({ items: await listRoutes(ctx, auth.projectId) }), {
      response: { 200: Items(Route), ...authErrors },
      detail: { summary: "List routes", security },
    })
    .post(
      "/routes",
      async ({ auth, body, status }) =>
        status(201, {
          ...(await createRoute(ctx, auth.projectId, body)),
          warnings: pipelineMapperWarnings(body.pipeline),
        }),
      {
        body: RouteInput,
        response: { 201: RouteSaved, ...authErrors, ...validationErrors },
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
    .patch(
      "/routes/:id",
      async ({ auth, params, body }) => ({
        ...(await updateRoute(ctx, auth.projectId, params.id, body)),
        warnings: pipelineMapperWarnings(body.pipeline),
      }),
      {
        params: IdParam,
        body: t.Partial(RouteInput),
        response: { 200: RouteSaved, 404: ErrorBody, ...authErrors, ...validationErrors },
        detail: { summary: "Update a route", security },
      },
    )
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
