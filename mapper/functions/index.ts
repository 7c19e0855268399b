/** Registers the built-in `call.*` helpers. Each helper is one file; import it here to ship it. */
import "./html-to-text.ts";
import "./extract-urls.ts";
import "./extract-bullet-list.ts";
import "./extract-reply-segments.ts";
import "./extract-key-value-pairs.ts";
import "./extract-dom.ts";
import "./extract-tables.ts";

export type { FunctionArgSpec, MapperFunctionSpec } from "./registry.ts";
export { registerFunction } from "./registry.ts";
