/**
 * TypeBox building blocks of the shapes the service publishes (API views, stored JSON), so each shape
 * is declared once as a schema and its TypeScript type is derived with `Static` (docs/architecture.md,
 * Invariants). Plain TypeBox, no web framework: the domain modules that declare views import this.
 *
 * Invariant: each helper renders, in the OpenAPI document, exactly as the Elysia builder it stands for
 * (`t.Nullable`, `t.Integer`), so moving a schema from the API layer to the domain does not change the
 * published document or the generated client.
 */
import { type TNull, type TSchema, type TUnion, type TUnsafe, Type } from "@sinclair/typebox";

/** `schema` or `null`; the `nullable` flag is what Elysia's `t.Nullable` adds for OpenAPI 3.0 readers. */
export function Nullable<T extends TSchema>(schema: T): TUnion<[T, TNull]> {
  return Type.Union([schema, Type.Null()], { nullable: true });
}

/**
 * An integer. Typed `number`; its JSON Schema is the one Elysia's `t.Integer` publishes, an integer or
 * an integer-formatted string (Elysia accepts both because query strings are text). The service only
 * ever sends numbers; publishing plain `{"type": "integer"}` instead would narrow the generated
 * client's `string | number` fields to `number`, a change of the published document.
 */
export function Integer(): TUnsafe<number> {
  return Type.Unsafe<number>(Type.Union([Type.String({ format: "integer", default: 0 }), Type.Integer()]));
}

/** An RFC 3339 date-time string (`Date.prototype.toISOString`). */
export const Timestamp = Type.String({ format: "date-time" });
