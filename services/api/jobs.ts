/** Bulk replay and its job (docs/api.md, docs/delivery.md "Bulk replay"), scoped to the key's project. */
import { Elysia, t } from "elysia";
import type { AppContext } from "../context.ts";
import { getJob, JobViewSchema, MAX_BULK_REPLAY, startBulkReplay } from "../resources/bulk-replay.ts";
import { projectAuth } from "./auth.ts";
import { authErrors, ErrorBody, EventStatus, IdParam, validationErrors } from "./schemas.ts";

const security = [{ apiKey: [] }];

const BulkReplayInput = t.Object(
  {
    filter: t.Optional(
      t.Object(
        {
          status: t.Optional(t.Array(EventStatus, { maxItems: 5 })),
          route_id: t.Optional(t.String({ maxLength: 200 })),
          endpoint_id: t.Optional(t.String({ maxLength: 200 })),
          since: t.Optional(t.String({ maxLength: 64 })),
          until: t.Optional(t.String({ maxLength: 64 })),
        },
        { additionalProperties: false },
      ),
    ),
    event_ids: t.Optional(t.Array(t.String({ maxLength: 64 }), { maxItems: MAX_BULK_REPLAY })),
    dry_run: t.Optional(t.Boolean()),
  },
  { additionalProperties: false },
);

/** Mounts `POST /events/replay` and `GET /jobs/:id`. */
export function jobsApi(ctx: AppContext) {
  return new Elysia({ tags: ["events"] })
    .use(projectAuth(ctx))
    .post(
      "/events/replay",
      async ({ auth, body, status }) => {
        const r = await startBulkReplay(ctx, auth.projectId, body);
        return "job_id" in r ? status(202, r) : status(200, r);
      },
      {
        body: BulkReplayInput,
        response: {
          200: t.Object({ matched: t.Integer(), replayable: t.Integer() }),
          202: t.Object({ queued: t.Integer(), job_id: t.String() }),
          ...authErrors,
          ...validationErrors,
        },
        detail: {
          summary:
            "Replay many events: by filter (status, route_id, endpoint_id, since, until) and/or event_ids, at most 100,000; dry_run counts",
          security,
        },
      },
    )
    .get("/jobs/:id", ({ auth, params }) => getJob(ctx, auth.projectId, params.id), {
      params: IdParam,
      response: { 200: JobViewSchema, 404: ErrorBody, ...authErrors },
      detail: { summary: "A bulk replay job's progress", security },
    });
}
