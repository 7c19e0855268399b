import { type Static, Type } from "@sinclair/typebox";
import { index, integer, jsonb, pgTable, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { Integer, Nullable } from "../../lib/schema.ts";
import { events } from "./events.ts";

/**
 * `request_capture` of an attempt: what was sent, secrets already redacted (delivery/capture.ts). Stored
 * as is and served as is by the events API, so this one schema is both the column type and the view.
 */
export const RequestCaptureSchema = Type.Object({
  method: Type.String(),
  url: Type.String(),
  headers: Type.Record(Type.String(), Type.String()),
  body_preview: Type.String(),
});
/** See {@link RequestCaptureSchema}. */
export type RequestCapture = Static<typeof RequestCaptureSchema>;

/** `response_capture` of an attempt: what came back, or the network error instead (`status` 0). */
export const ResponseCaptureSchema = Type.Object({
  status: Integer(),
  headers: Type.Record(Type.String(), Type.String()),
  body_preview: Type.String(),
  network_error: Nullable(Type.String()),
});
/** See {@link ResponseCaptureSchema}. */
export type ResponseCapture = Static<typeof ResponseCaptureSchema>;

/** Append-only log: one row per delivery attempt. (event_id, number) is unique — one attempt, one row. */
export const attempts = pgTable(
  "attempts",
  {
    id: text("id").primaryKey(),
    eventId: uuid("event_id")
      .notNull()
      .references(() => events.id, { onDelete: "cascade" }),
    number: integer("number").notNull(),
    /** the endpoint attempted (null on attempts recorded before it was kept): the health window's index */
    endpointId: text("endpoint_id"),
    trigger: text("trigger").$type<"auto" | "replay">().notNull(),
    status: text("status").$type<"success" | "failed">().notNull(),
    httpStatus: integer("http_status").notNull(),
    latencyMs: integer("latency_ms").notNull(),
    requestCapture: jsonb("request_capture").$type<RequestCapture>().notNull(),
    responseCapture: jsonb("response_capture").$type<ResponseCapture>().notNull(),
    createdAt: timestamp("created_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("attempts_event_number_idx").on(t.eventId, t.number),
    index("attempts_event_idx").on(t.eventId),
    index("attempts_endpoint_created_idx").on(t.endpointId, t.createdAt),
  ],
);
