/** Operator endpoints (docs/api.md): create and list projects. */
import { Elysia, t } from "elysia";
import type { AppContext } from "../context.ts";
import { createProject, listProjects } from "../resources/projects.ts";
import { setupAuth } from "./auth.ts";
import { authErrors, CreatedApiKey, Items, Project, validationErrors } from "./schemas.ts";

export function adminApi(ctx: AppContext) {
  return new Elysia({ tags: ["operator"] })
    .use(setupAuth(ctx))
    .post(
      "/admin/projects",
      async ({ body, status }) => {
        const { project, apiKey } = await createProject(ctx, body);
        return status(201, {
          project_id: project.id,
          name: project.name,
          inbound_address: project.inbound_address,
          api_key: apiKey,
        });
      },
      {
        body: t.Object(
          {
            name: t.String({ minLength: 1, maxLength: 200 }),
            api_key_name: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
          },
          { additionalProperties: false },
        ),
        response: {
          201: t.Object({
            project_id: t.String(),
            name: t.String(),
            inbound_address: t.String(),
            api_key: CreatedApiKey,
          }),
          ...authErrors,
          ...validationErrors,
        },
        detail: {
          summary: "Create a project with its inbound address and a default API key (secret shown once)",
          security: [{ setupToken: [] }],
        },
      },
    )
    .get("/admin/projects", async () => ({ items: await listProjects(ctx) }), {
      response: { 200: Items(Project), ...authErrors },
      detail: { summary: "List projects", security: [{ setupToken: [] }] },
    });
}
