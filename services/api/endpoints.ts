/** Webhook endpoints CRUD (docs/api.md). */
import { Elysia, t } from "elysia";
import type { AppContext } from "../context.ts";
import {
  createEndpoint,
  deleteEndpoint,
  EndpointHealthSchema,
  endpointHealth,
  getEndpoint,
  listEndpoints,
  updateEndpoint,
} from "../resources/endpoints.ts";
import { projectAuth } from "./auth.ts";
import {
  authErrors,
  Endpoint,
  EndpointInput,
  ErrorBody,
  IdParam,
  Items,
  validationErrors,
} from "./schemas.ts";

const security = [{ apiKey: [] }];

export function endpointsApi(ctx: AppContext) {
  return new Elysia({ tags: ["endpoints"] })
    .use(projectAuth(ctx))
    .get("/endpoints", async ({ auth }) => ({ items: await listEndpoints(ctx, auth.projectId) }), {
      response: { 200: Items(Endpoint), ...authErrors },
      detail: { summary: "List endpoints (secret header values shown as ***)", security },
    })
    .post(
      "/endpoints",
      async ({ auth, body, status }) => status(201, await createEndpoint(ctx, auth.projectId, body)),
      {
        body: EndpointInput,
        response: { 201: Endpoint, ...authErrors, ...validationErrors },
        detail: { summary: "Create an endpoint (http/https, no credentials in the URL)", security },
      },
    )
    .get("/endpoints/:id", ({ auth, params }) => getEndpoint(ctx, auth.projectId, params.id), {
      params: IdParam,
      response: { 200: Endpoint, 404: ErrorBody, ...authErrors },
      detail: { summary: "Get an endpoint", security },
    })
    .get("/endpoints/:id/health", ({ auth, params }) => endpointHealth(ctx, auth.projectId, params.id), {
      params: IdParam,
      response: { 200: EndpointHealthSchema, 404: ErrorBody, ...authErrors },
      detail: {
        summary:
          "Endpoint health: the last hour of attempts (success rate, latency, last error) and the circuit",
        security,
      },
    })
    .patch(
      "/endpoints/:id",
      ({ auth, params, body }) => updateEndpoint(ctx, auth.projectId, params.id, body),
      {
        params: IdParam,
        body: t.Partial(EndpointInput),
        response: { 200: Endpoint, 404: ErrorBody, ...authErrors, ...validationErrors },
        detail: { summary: "Update an endpoint", security },
      },
    )
    .delete(
      "/endpoints/:id",
      async ({ auth, params, set }) => {
        await deleteEndpoint(ctx, auth.projectId, params.id);
        set.status = 204;
      },
      {
        params: IdParam,
        response: { 204: t.Void(), 404: ErrorBody, 409: ErrorBody, ...authErrors },
        detail: { summary: "Delete an endpoint (refused while a route uses it)", security },
      },
    );
}
