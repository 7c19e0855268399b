/** Events API (docs/api.md): list, detail, attempt log and replay, scoped to the key's project. */
import { Elysia, t } from "elysia";
import type { AppContext } from "../context.ts";
import { getEventDetail, listAttempts, listEvents } from "../resources/events.ts";
import { discardHeldEvent, releaseHeldEvent } from "../resources/hold-queue.ts";
import { queueReplay } from "../resources/replay.ts";
import { projectAuth } from "./auth.ts";
import {
  Attempt,
  authErrors,
  ErrorBody,
  Event,
  EventDetail,
  EventIdParam,
  EventList,
  EventStatus,
  Items,
  ReplayQueued,
  validationErrors,
} from "./schemas.ts";

const security = [{ apiKey: [] }];

/**
 * Mounts `/events`, `/events/:event_id`, `/events/:event_id/attempts`, `/events/:event_id/replay`, and the
 * hold queue's `/events/:event_id/release` and `/events/:event_id/discard`.
 */
export function eventsApi(ctx: AppContext) {
  return new Elysia({ tags: ["events"] })
    .use(projectAuth(ctx))
    .get("/events", ({ auth, query }) => listEvents(ctx, auth.projectId, query), {
      query: t.Object({
        status: t.Optional(EventStatus),
        route_id: t.Optional(t.String({ maxLength: 200 })),
        since: t.Optional(t.String({ maxLength: 40, description: "created at or after (RFC 3339)" })),
        until: t.Optional(t.String({ maxLength: 40, description: "created before (RFC 3339)" })),
        q: t.Optional(
          t.String({
            maxLength: 500,
            description: "words that must all occur in the subject, a From address or the Message-ID",
          }),
        ),
        limit: t.Optional(t.Integer({ minimum: 1, maximum: 200, default: 50 })),
        cursor: t.Optional(t.String({ maxLength: 500 })),
      }),
      response: { 200: EventList, ...authErrors, ...validationErrors },
      detail: {
        summary:
          "List events, newest first (filters status, route_id, since, until and a search q; pass next_cursor to page)",
        security,
      },
    })
    .get("/events/:event_id", ({ auth, params }) => getEventDetail(ctx, auth.projectId, params.event_id), {
      params: EventIdParam,
      response: { 200: EventDetail, 404: ErrorBody, ...authErrors },
      detail: { summary: "Get an event with its message summary and route snapshot", security },
    })
    .get(
      "/events/:event_id/attempts",
      async ({ auth, params }) => ({ items: await listAttempts(ctx, auth.projectId, params.event_id) }),
      {
        params: EventIdParam,
        response: { 200: Items(Attempt), 404: ErrorBody, ...authErrors },
        detail: {
          summary: "List an event's delivery attempts, oldest first (secrets shown as ***)",
          security,
        },
      },
    )
    .post(
      "/events/:event_id/replay",
      async ({ auth, params, status }) => {
        await queueReplay(ctx, auth.projectId, params.event_id);
        return status(202, { queued: true as const, event_id: params.event_id });
      },
      {
        params: EventIdParam,
        response: { 202: ReplayQueued, 404: ErrorBody, 409: ErrorBody, ...authErrors },
        detail: {
          summary:
            "Replay a delivered, dead or discarded event: rebuilt from the stored message and the current route, same idempotency key",
          security,
        },
      },
    )
    .post(
      "/events/:event_id/release",
      async ({ auth, params, status }) => {
        await releaseHeldEvent(ctx, auth.projectId, params.event_id);
        ctx.ingest.wake.request();
        return status(202, { queued: true as const, event_id: params.event_id });
      },
      {
        params: EventIdParam,
        response: { 202: ReplayQueued, 404: ErrorBody, 409: ErrorBody, ...authErrors },
        detail: {
          summary:
            "Release a held event: it becomes pending and gets a normal first attempt (409 events.not_held otherwise)",
          security,
        },
      },
    )
    .post(
      "/events/:event_id/discard",
      ({ auth, params }) => discardHeldEvent(ctx, auth.projectId, params.event_id),
      {
        params: EventIdParam,
        response: { 200: Event, 404: ErrorBody, 409: ErrorBody, ...authErrors },
        detail: {
          summary:
            "Discard a held event: status discarded, last_error held:discarded (409 events.not_held otherwise)",
          security,
        },
      },
    );
}
