/**
 * TypeBox schemas shared by the API operations (also what the OpenAPI document is generated from). The
 * response views are declared once in resources/ beside the functions that build them (their types
 * are `Static` of the same schemas); this module names them for the operations and adds the request
 * bodies and the error body, which only the API has.
 */
import type { TSchema } from "@sinclair/typebox";
import { t } from "elysia";
import { EventStatusSchema } from "../lib/event-status.ts";
import { Timestamp } from "../lib/schema.ts";
import { ApiKeyViewSchema, CreatedApiKeySchema } from "../resources/api-keys.ts";
import { EndpointViewSchema } from "../resources/endpoints.ts";
import {
  AttemptViewSchema,
  EventDetailViewSchema,
  EventPageSchema,
  EventViewSchema,
} from "../resources/events.ts";
import { ProjectViewSchema } from "../resources/projects.ts";
import { RouteViewSchema } from "../resources/routes.ts";
import { CreatedSigningSecretSchema, SigningSecretViewSchema } from "../resources/signing-secrets.ts";

/**
 * The same schema, published once under `components.schemas.<name>` of the OpenAPI document and
 * referenced from every operation that uses it (openapi-document.ts moves it there).
 */
export function named<T extends TSchema>(name: string, schema: T): T {
  return { ...schema, $id: `#/components/schemas/${name}` };
}

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

/** An RFC 3339 date-time (lib/schema.ts). */
export { Timestamp };

// The views: declared once beside their mappers in resources/, used here as the operations' responses.
export const Project = named("Project", ProjectViewSchema);
export const ApiKey = named("ApiKey", ApiKeyViewSchema);
export const CreatedApiKey = named("CreatedApiKey", CreatedApiKeySchema);
export const Endpoint = named("Endpoint", EndpointViewSchema);
export const SigningSecret = named("SigningSecret", SigningSecretViewSchema);
export const CreatedSigningSecret = named("CreatedSigningSecret", CreatedSigningSecretSchema);
export const Route = named("Route", RouteViewSchema);
export const Event = named("Event", EventViewSchema);
export const EventDetail = named("EventDetail", EventDetailViewSchema);
export const Attempt = named("Attempt", AttemptViewSchema);
/** `GET /v1/events`: a page of events and the cursor of the next page (null on the last). */
export const EventList = named("EventPage", EventPageSchema);

export const EndpointInput = t.Object(
  {
    url: t.String({ maxLength: 2048 }),
    headers: t.Optional(t.Record(t.String(), t.String())),
    secret_headers: t.Optional(t.Array(t.String(), { maxItems: 30 })),
    timeout_s: t.Optional(t.Integer({ minimum: 1, maximum: 60 })),
    rate_limit_per_s: t.Optional(t.Union([t.Number({ exclusiveMinimum: 0, maximum: 10_000 }), t.Null()])),
    max_in_flight: t.Optional(t.Union([t.Integer({ minimum: 1, maximum: 10_000 }), t.Null()])),
    paused: t.Optional(t.Boolean()),
  },
  { additionalProperties: false },
);

/** Rule and pipeline are checked by the routing validators (for their error codes and paths), not here. */
export const RouteInput = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 200 }),
    endpoint_id: t.String({ minLength: 1 }),
    signing_secret_kid: t.String({ minLength: 1 }),
    rule: t.Optional(t.Unknown()),
    pipeline: t.Optional(t.Unknown()),
    attachment_policy: t.Optional(t.Unknown()),
    enabled: t.Optional(t.Boolean()),
    /** a duration (`6h`, `30m`; a bare number is seconds): `route.silent` after that long without mail; null = off */
    expect_mail_within: t.Optional(t.Union([t.String(), t.Number(), t.Null()])),
    /** checked by the routes resource (for per-entry error paths); null = the global policy */
    retry_policy: t.Optional(
      t.Union([
        t.Object({
          schedule: t.Array(t.Union([t.String(), t.Number()]), { maxItems: 49 }),
          max_attempts: t.Integer({ minimum: 1, maximum: 50 }),
        }),
        t.Null(),
      ]),
    ),
  },
  { additionalProperties: false },
);

/** An event's status (declared once in lib/event-status.ts). */
export const EventStatus = named("EventStatus", EventStatusSchema);

/** `POST /v1/events/{id}/replay` → 202. */
export const ReplayQueued = named(
  "ReplayQueued",
  t.Object({ queued: t.Boolean(), event_id: t.String({ format: "uuid" }) }),
);

export const Items = <T extends import("@sinclair/typebox").TSchema>(item: T) =>
  t.Object({ items: t.Array(item) });

export const IdParam = t.Object({ id: t.String({ maxLength: 200 }) });

/** An event's id in the path, named as in the spec (`{event_id}`). */
export const EventIdParam = t.Object({ event_id: t.String({ maxLength: 200 }) });
