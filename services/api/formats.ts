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
import { isUuid } from "../lib/ids.ts";

FormatRegistry.Set("uuid", isUuid);
