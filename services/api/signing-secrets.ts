/** Signing secrets (docs/api.md): POST shows the secret once. */
import { Elysia, t } from "elysia";
import type { AppContext } from "../context.ts";
import {
  createSigningSecret,
  deleteSigningSecret,
  listSigningSecrets,
} from "../resources/signing-secrets.ts";
import { projectAuth } from "./auth.ts";
import { authErrors, CreatedSigningSecret, ErrorBody, Items, SigningSecret } from "./schemas.ts";

const security = [{ apiKey: [] }];

export function signingSecretsApi(ctx: AppContext) {
  return new Elysia({ tags: ["signing secrets"] })
    .use(projectAuth(ctx))
    .get("/signing-secrets", async ({ auth }) => ({ items: await listSigningSecrets(ctx, auth.projectId) }), {
      response: { 200: Items(SigningSecret), ...authErrors },
      detail: { summary: "List signing secrets (kids only)", security },
    })
    .post(
      "/signing-secrets",
      async ({ auth, status }) => status(201, await createSigningSecret(ctx, auth.projectId)),
      {
        response: { 201: CreatedSigningSecret, ...authErrors },
        detail: { summary: "Create a signing secret (whsec_…, shown once)", security },
      },
    )
    .delete(
      "/signing-secrets/:kid",
      async ({ auth, params, set }) => {
        await deleteSigningSecret(ctx, auth.projectId, params.kid);
        set.status = 204;
      },
      {
        params: t.Object({ kid: t.String({ maxLength: 200 }) }),
        response: { 204: t.Void(), 404: ErrorBody, 409: ErrorBody, ...authErrors },
        detail: { summary: "Delete a signing secret (refused while a route signs with it)", security },
      },
    );
}
