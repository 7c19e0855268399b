/** IMAP mailboxes (docs/api.md, "Mailboxes"): the credential is write-only. */
import { Elysia, t } from "elysia";
import type { AppContext } from "../context.ts";
import {
  createMailbox,
  deleteMailbox,
  getMailbox,
  listMailboxes,
  MailboxInputSchema,
  MailboxViewSchema,
  requestMailboxSync,
  updateMailbox,
} from "../resources/mailboxes.ts";
import { projectAuth } from "./auth.ts";
import { authErrors, ErrorBody, IdParam, Items, validationErrors } from "./schemas.ts";

const security = [{ apiKey: [] }];
const Mailbox = MailboxViewSchema;

export function mailboxesApi(ctx: AppContext) {
  return new Elysia({ tags: ["mailboxes"] })
    .use(projectAuth(ctx))
    .get("/mailboxes", async ({ auth }) => ({ items: await listMailboxes(ctx, auth.projectId) }), {
      response: { 200: Items(Mailbox), ...authErrors },
      detail: { summary: "List IMAP mailboxes, with their status", security },
    })
    .post(
      "/mailboxes",
      async ({ auth, body, status }) => status(201, await createMailbox(ctx, auth.projectId, body)),
      {
        body: MailboxInputSchema,
        response: { 201: Mailbox, ...authErrors, ...validationErrors },
        detail: {
          summary:
            "Add an IMAP mailbox to fetch mail from (password or OAuth access token; never shown again)",
          security,
        },
      },
    )
    .get("/mailboxes/:id", ({ auth, params }) => getMailbox(ctx, auth.projectId, params.id), {
      params: IdParam,
      response: { 200: Mailbox, 404: ErrorBody, ...authErrors },
      detail: { summary: "Get a mailbox and its status", security },
    })
    .patch(
      "/mailboxes/:id",
      ({ auth, params, body }) => updateMailbox(ctx, auth.projectId, params.id, body),
      {
        params: IdParam,
        body: t.Partial(MailboxInputSchema),
        response: { 200: Mailbox, 404: ErrorBody, ...authErrors, ...validationErrors },
        detail: { summary: "Change a mailbox (the poller reconnects)", security },
      },
    )
    .delete(
      "/mailboxes/:id",
      async ({ auth, params, set }) => {
        await deleteMailbox(ctx, auth.projectId, params.id);
        set.status = 204;
      },
      {
        params: IdParam,
        response: { 204: t.Void(), 404: ErrorBody, ...authErrors },
        detail: { summary: "Delete a mailbox (messages already taken in stay)", security },
      },
    )
    .post(
      "/mailboxes/:id/sync",
      async ({ auth, params, status }) =>
        status(202, await requestMailboxSync(ctx, auth.projectId, params.id)),
      {
        params: IdParam,
        response: { 202: Mailbox, 404: ErrorBody, ...authErrors },
        detail: { summary: "Fetch new mail now", security },
      },
    );
}
