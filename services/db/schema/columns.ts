import { customType } from "drizzle-orm/pg-core";

/** Postgres `bytea`, read and written as bytes. */
export const bytea = customType<{ data: Uint8Array; driverData: Uint8Array }>({
  dataType: () => "bytea",
});
