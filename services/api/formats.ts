/**
 * String formats checked by the API's TypeBox schemas, registered after `@elysiajs/openapi`.
 *
 * Importing `@elysiajs/openapi` (through its bundled `@sinclair/typemap`) replaces TypeBox's "uuid",
 * "email", "url", "date" … format checks with ones that build a new zod schema on every call
 * (`check(string().uuid(), value)`). Every response carrying an event id paid for that: about 8% of
 * the CPU of `POST /v1/messages` in a profile. The formats this API uses are put back here as plain
 * pattern tests.
 */
import "@elysiajs/openapi";
import { FormatRegistry } from "@sinclair/typebox";

/** RFC 9562 layout, any version (ids here are v4, v7 and the synthetic v8), either case. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The "uuid" format check this API uses. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

FormatRegistry.Set("uuid", isUuid);
