import { index, integer, jsonb, pgTable, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { events } from "./events.ts";

export interface RequestCaptureRow {
  method: string;
  url: string;
  headers: Record<string, string>;
  body_preview: string;
}
export interface ResponseCaptureRow {
  status: number;
  headers: Record<string, string>;
  body_preview: string;
  network_error: string | null;
}

/** Append-only log: one row per delivery attempt. (event_id, number) is unique — one attempt, one row. */
export const attempts = pgTable(
  "attempts",
  {
    id: text("id").primaryKey(),
    eventId: uuid("event_id")
      .notNull()
      .references(() => events.id, { onDelete: "cascade" }),
    number: integer("number").notNull(),
    trigger: text("trigger").$type<"auto" | "replay">().notNull(),
    status: text("status").$type<"success" | "failed">().notNull(),
    httpStatus: integer("http_status").notNull(),
    latencyMs: integer("latency_ms").notNull(),
    requestCapture: jsonb("request_capture").$type<RequestCaptureRow>().notNull(),
    responseCapture: jsonb("response_capture").$type<ResponseCaptureRow>().notNull(),
    createdAt: timestamp("created_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("attempts_event_number_idx").on(t.eventId, t.number),
    index("attempts_event_idx").on(t.eventId),
  ],
);
