/**
 * TypeBox building blocks of the shapes the service publishes (API views, stored JSON), so each shape
 * is declared once as a schema and its TypeScript type is derived with `Static` (docs/architecture.md,
 * Invariants). Plain TypeBox, no web framework: the domain modules that declare views import this.
 *
 * Invariant: each helper renders, in the OpenAPI document, exactly as the Elysia builder it stands for
 * (`t.Nullable`), so moving a schema from the API layer to the domain does not change the document.
 */
import { type TNull, type TSchema, type TUnion, Type } from "@sinclair/typebox";

/** `schema` or `null`; the `nullable` flag is what Elysia's `t.Nullable` adds for OpenAPI 3.0 readers. */
export function Nullable<T extends TSchema>(schema: T): TUnion<[T, TNull]> {
  return Type.Union([schema, Type.Null()], { nullable: true });
}

/** An RFC 3339 date-time string (`Date.prototype.toISOString`). */
export const Timestamp = Type.String({ format: "date-time" });
