// Storage settings of the migrations: a message's large columns use lz4 where the server has it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { createTestDatabase, type TestDatabase, testDbKinds } from "../support/db.ts";

for (const kind of testDbKinds()) {
  describe(`messages storage (${kind})`, () => {
    let db: TestDatabase;
    beforeAll(async () => {
      db = await createTestDatabase(kind);
    });
    afterAll(() => db?.drop());

    test("parsed and raw_bytes are compressed with lz4 on Postgres; PGlite (no lz4) keeps the default", async () => {
      const rows = await db.database.rows<{ attname: string; c: string }>(
        sql`select attname, attcompression::text as c from pg_attribute
            where attrelid = 'messages'::regclass and attname in ('parsed', 'raw_bytes') order by attname`,
      );
      const expected = kind === "postgres" ? "l" : "";
      expect(rows.map((r) => [r.attname, r.c.trim()])).toEqual([
        ["parsed", expected],
        ["raw_bytes", expected],
      ]);
    });
  });
}
