/**
 * Reading stored messages back (docs/api.md, "Messages"): `GET /v1/messages` (search and filters,
 * newest first, cursor pages), `GET /v1/messages/{message_id}` and `…/raw`. The upload,
 * `POST /v1/messages`, is in messages.ts. `{message_id}` is a `msg_…` id or a URL-encoded Message-ID,
 * as in the attachment URL path. `DELETE /v1/messages/{message_id}` erases the message
 * (resources/message-erasure.ts).
 */
import { Elysia, t } from "elysia";
import type { AppContext } from "../context.ts";
import { readRawMessage } from "../ingest/raw.ts";
import { AppError } from "../lib/errors.ts";
import {
  getMessage,
  listMessages,
  MessageDetailSchema,
  MessagePageSchema,
  resolveMessage,
} from "../resources/message-archive.ts";
import { eraseMessage } from "../resources/message-erasure.ts";
import { projectAuth } from "./auth.ts";
import { authErrors, ErrorBody, named, validationErrors } from "./schemas.ts";

const security = [{ apiKey: [] }];
const MessagePage = named("MessagePage", MessagePageSchema);
const MessageDetail = named("MessageDetail", MessageDetailSchema);

const MessageParams = t.Object({
  message_id: t.String({
    maxLength: 1000,
    description: "the message's `msg_…` id, or its URL-encoded Message-ID (brackets optional)",
  }),
});

export function messageReadApi(ctx: AppContext) {
  return new Elysia({ tags: ["messages"] })
    .use(projectAuth(ctx))
    .get("/messages", ({ auth, query }) => listMessages(ctx, auth.projectId, query), {
      query: t.Object({
        q: t.Optional(
          t.String({ maxLength: 500, description: "full-text search: subject, addresses, text" }),
        ),
        from: t.Optional(t.String({ maxLength: 320 })),
        to: t.Optional(t.String({ maxLength: 320 })),
        subject: t.Optional(t.String({ maxLength: 500 })),
        since: t.Optional(t.String({ maxLength: 40, description: "received at or after (RFC 3339)" })),
        until: t.Optional(t.String({ maxLength: 40, description: "received at or before (RFC 3339)" })),
        limit: t.Optional(t.Integer({ minimum: 1, maximum: 200, default: 50 })),
        cursor: t.Optional(t.String({ maxLength: 500 })),
      }),
      response: { 200: MessagePage, ...authErrors, ...validationErrors },
      detail: { summary: "List and search stored messages, newest first", security },
    })
    .get("/messages/:message_id", ({ auth, params }) => getMessage(ctx, auth.projectId, params.message_id), {
      params: MessageParams,
      response: { 200: MessageDetail, 404: ErrorBody, 409: ErrorBody, ...authErrors },
      detail: {
        summary: "Get a stored message: headers, bodies, attachments, what it is understood as",
        security,
      },
    })
    .get(
      "/messages/:message_id/raw",
      async ({ auth, params }) => {
        const row = await resolveMessage(ctx, auth.projectId, params.message_id);
        const bytes = await readRawMessage(ctx, row.id);
        if (!bytes) throw new AppError("messages.not_found", "the message is no longer stored");
        return new Response(bytes as Uint8Array<ArrayBuffer>, {
          headers: {
            "content-type": "message/rfc822",
            "content-disposition": `attachment; filename="${row.id}.eml"`,
          },
        });
      },
      {
        params: MessageParams,
        response: {
          200: t.Any({ description: "the raw message (message/rfc822)" }),
          404: ErrorBody,
          409: ErrorBody,
          ...authErrors,
        },
        detail: { summary: "Download the raw stored message (message/rfc822)", security },
      },
    )
    .delete(
      "/messages/:message_id",
      async ({ auth, params, set }) => {
        await eraseMessage(ctx, auth.projectId, params.message_id);
        set.status = 204;
      },
      {
        params: MessageParams,
        response: {
          204: t.Void(),
          404: ErrorBody,
          409: ErrorBody,
          ...authErrors,
        },
        detail: {
          summary:
            "Erase a stored message: its row, raw bytes, attachment blobs no other message shares, its events' bodies and attempt captures (events stay, message null)",
          security,
        },
      },
    );
}
