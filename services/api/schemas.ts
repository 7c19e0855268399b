/** TypeBox schemas shared by the API operations (also what the OpenAPI document is generated from). */
import { t } from "elysia";
import { EventStatusSchema } from "../lib/event-status.ts";

export const ErrorBody = t.Object(
  {
    error: t.Object({
      code: t.String(),
      message: t.String(),
      details: t.Optional(
        t.Array(t.Object({ path: t.String(), message: t.String(), code: t.Optional(t.String()) })),
      ),
    }),
  },
  { $id: "#/components/schemas/Error" },
);

/** Error responses every project operation can give. */
export const authErrors = { 401: ErrorBody, 500: ErrorBody } as const;
export const validationErrors = { 400: ErrorBody, 422: ErrorBody } as const;

export const Timestamp = t.String({ format: "date-time" });

export const Project = t.Object({
  id: t.String(),
  name: t.String(),
  inbound_address: t.String(),
  created_at: Timestamp,
});

export const ApiKey = t.Object({
  id: t.String(),
  name: t.String(),
  prefix: t.String(),
  created_at: Timestamp,
  last_used_at: t.Nullable(Timestamp),
  disabled_at: t.Nullable(Timestamp),
});

export const CreatedApiKey = t.Object({
  id: t.String(),
  name: t.String(),
  secret: t.String(),
  created_at: Timestamp,
});

export const Endpoint = t.Object({
  id: t.String(),
  url: t.String(),
  headers: t.Record(t.String(), t.String()),
  secret_headers: t.Array(t.String()),
  timeout_s: t.Integer(),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const EndpointInput = t.Object(
  {
    url: t.String({ maxLength: 2048 }),
    headers: t.Optional(t.Record(t.String(), t.String())),
    secret_headers: t.Optional(t.Array(t.String(), { maxItems: 30 })),
    timeout_s: t.Optional(t.Integer({ minimum: 1, maximum: 60 })),
  },
  { additionalProperties: false },
);

export const SigningSecret = t.Object({ kid: t.String(), created_at: Timestamp });
export const CreatedSigningSecret = t.Object({ kid: t.String(), secret: t.String(), created_at: Timestamp });

export const PipelineSchema = t.Object({
  steps: t.Array(t.Object({ name: t.String(), args: t.Record(t.String(), t.Unknown()) })),
});

export const Route = t.Object({
  id: t.String(),
  name: t.String(),
  endpoint_id: t.String(),
  signing_secret_kid: t.String(),
  rule: t.Record(t.String(), t.Unknown()),
  pipeline: PipelineSchema,
  enabled: t.Boolean(),
  created_at: Timestamp,
  updated_at: Timestamp,
});

/** Rule and pipeline are checked by the routing validators (for their error codes and paths), not here. */
export const RouteInput = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 200 }),
    endpoint_id: t.String({ minLength: 1 }),
    signing_secret_kid: t.String({ minLength: 1 }),
    rule: t.Optional(t.Unknown()),
    pipeline: t.Optional(t.Unknown()),
    enabled: t.Optional(t.Boolean()),
  },
  { additionalProperties: false },
);

/** An event's status (declared once in lib/event-status.ts). */
export const EventStatus = EventStatusSchema;

export const Event = t.Object({
  id: t.String({ format: "uuid" }),
  route_id: t.String(),
  status: EventStatus,
  attempts: t.Integer(),
  last_error: t.Nullable(t.String()),
  next_attempt_at: t.Nullable(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
});

const Person = t.Object({ email: t.String(), name: t.String() });

export const EventDetail = t.Composite([
  Event,
  t.Object({
    message: t.Object({
      message_id: t.String(),
      subject: t.String(),
      from: t.Array(Person),
      to: t.Array(Person),
    }),
    routing: t.Object({
      route_id: t.String(),
      name: t.String(),
      endpoint_id: t.String(),
      endpoint_url: t.String(),
      kid: t.String(),
      pipeline: PipelineSchema,
    }),
  }),
]);

export const Attempt = t.Object({
  id: t.String(),
  number: t.Integer(),
  trigger: t.Union([t.Literal("auto"), t.Literal("replay")]),
  status: t.Union([t.Literal("success"), t.Literal("failed")]),
  http_status: t.Integer(),
  latency_ms: t.Integer(),
  created_at: Timestamp,
  request_capture: t.Object({
    method: t.String(),
    url: t.String(),
    headers: t.Record(t.String(), t.String()),
    body_preview: t.String(),
  }),
  response_capture: t.Object({
    status: t.Integer(),
    headers: t.Record(t.String(), t.String()),
    body_preview: t.String(),
    network_error: t.Nullable(t.String()),
  }),
});

/** `GET /v1/events`: a page of events and the cursor of the next page (null on the last). */
export const EventList = t.Object({ items: t.Array(Event), next_cursor: t.Nullable(t.String()) });

/** `POST /v1/events/{id}/replay` → 202. */
export const ReplayQueued = t.Object({ queued: t.Boolean(), event_id: t.String({ format: "uuid" }) });

export const Items = <T extends import("@sinclair/typebox").TSchema>(item: T) =>
  t.Object({ items: t.Array(item) });

export const IdParam = t.Object({ id: t.String({ maxLength: 200 }) });
