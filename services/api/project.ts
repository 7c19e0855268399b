/** The key's project and its API keys (spec: Authentication, rotation rule). */
import { Elysia, t } from "elysia";
import type { AppContext } from "../context.ts";
import { createApiKey, disableApiKey, listApiKeys } from "../resources/api-keys.ts";
import { setIntakePolicy } from "../resources/intake-policy.ts";
import { setNotifications } from "../resources/notifications.ts";
import { getProject } from "../resources/projects.ts";
import { projectAuth } from "./auth.ts";
import {
  ApiKey,
  authErrors,
  CreatedApiKey,
  ErrorBody,
  IdParam,
  Items,
  Project,
  validationErrors,
} from "./schemas.ts";

const security = [{ apiKey: [] }];

export function projectApi(ctx: AppContext) {
  return new Elysia({ tags: ["project"] })
    .use(projectAuth(ctx))
    .get("/project", ({ auth }) => getProject(ctx, auth.projectId), {
      response: { 200: Project, ...authErrors },
      detail: { summary: "The project of the API key", security },
    })
    .patch(
      "/project",
      async ({ auth, body }) => {
        if (body.intake_policy !== undefined) {
          await setIntakePolicy(ctx, auth.projectId, body.intake_policy);
          // This process's next message sees the policy at once (others within the lookup's few seconds).
          ctx.ingest.lookups.delete(auth.projectId);
        }
        if (body.notifications !== undefined) await setNotifications(ctx, auth.projectId, body.notifications);
        return getProject(ctx, auth.projectId);
      },
      {
        body: t.Object(
          { intake_policy: t.Optional(t.Unknown()), notifications: t.Optional(t.Unknown()) },
          { additionalProperties: false },
        ),
        response: { 200: Project, ...authErrors, ...validationErrors },
        detail: {
          summary:
            "Update the project: intake_policy {reject, hold} (route rules or null) applied to every message before it is stored; notifications {endpoint_id, signing_secret_kid, types} (or null) for operational notifications",
          security,
        },
      },
    )
    .get("/project/api-keys", async ({ auth }) => ({ items: await listApiKeys(ctx, auth.projectId) }), {
      response: { 200: Items(ApiKey), ...authErrors },
      detail: { summary: "List API keys (secrets are never shown again)", security },
    })
    .post(
      "/project/api-keys",
      async ({ auth, body, status }) =>
        status(201, await createApiKey(ctx, auth.projectId, body?.name ?? "key")),
      {
        body: t.Optional(
          t.Object(
            { name: t.Optional(t.String({ minLength: 1, maxLength: 200 })) },
            { additionalProperties: false },
          ),
        ),
        response: { 201: CreatedApiKey, ...authErrors, ...validationErrors },
        detail: {
          summary: "Create an API key (a replacement during rotation); the secret is shown once",
          security,
        },
      },
    )
    .delete("/project/api-keys/:id", ({ auth, params }) => disableApiKey(ctx, auth.projectId, params.id), {
      params: IdParam,
      response: { 200: ApiKey, 404: ErrorBody, 409: ErrorBody, ...authErrors },
      detail: { summary: "Disable an API key (the last active key cannot be disabled)", security },
    });
}
