/**
 * What the OpenAPI document says beyond the operations' schemas: the bodies the service POSTs to
 * endpoints (`webhooks`) and examples on the main operations (by operationId). openapi-document.ts
 * puts them in place.
 */
import { GenericBodySchema } from "../routing/schemas/generic.ts";
import type { OperationExamples, WebhookDoc } from "./openapi-document.ts";
import { Event, EventStatus } from "./schemas.ts";

type Json = WebhookDoc["schema"];

const SIGNED =
  "Signed with both schemes (X-Service-Signature and Standard Webhooks' webhook-* headers) and carrying X-Idempotency-Key, the same on every attempt and replay; see docs/delivery.md.";

/** Every body a route's final step can deliver, and the service's own notifications. */
export const API_WEBHOOKS: WebhookDoc[] = [
  {
    name: "generic@1",
    summary: "map.generic_json (args {}): the message as generic@1 JSON",
    description: `The body of a route whose pipeline ends in map.generic_json with {}. ${SIGNED}`,
    contentType: "application/json",
    schema: { ...(GenericBodySchema as unknown as Json), $id: "#/components/schemas/GenericV1" },
  },
];

const EVENT_ID = "0193f1c2-7d1e-7a53-9b1c-4c1d2e3f4a5b";
const ROUTE = {
  name: "invoices",
  endpoint_id: "ep_01jd3x4k5m6n7p8q9r0s",
  signing_secret_kid: "kid_01jd3x4k5m6n7p8q",
  rule: { subject_contains: ["invoice", "receipt"] },
  pipeline: { steps: [{ name: "map.generic_json", args: {} }] },
};

/** Shared shapes published in `components.schemas` although no operation returns them alone. */
export const API_SCHEMAS = [Event, EventStatus] as unknown as Json[];

/** Examples on the operations a new user calls first. */
export const API_EXAMPLES: Record<string, OperationExamples> = {
  createEndpoint: {
    request: {
      url: "https://example.com/hooks/mail",
      headers: { Authorization: "Bearer abc" },
      secret_headers: ["authorization"],
      timeout_s: 10,
    },
  },
  createRoute: { request: ROUTE },
  replayEvent: { responses: { "202": { queued: true, event_id: EVENT_ID } } },
  previewMapper: {
    request: {
      config: { version: "v1", output: { subject: { var: "message.subject" } } },
      message: { subject: "Invoice 2041", from: [{ email: "ada@example.com", name: "Ada" }] },
    },
    responses: { "200": { output: { subject: "Invoice 2041" } } },
  },
  validateMapperConfig: {
    request: { config: { version: "v1", output: { subject: { var: "message.subject" } } } },
  },
};
