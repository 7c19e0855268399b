-- A message's parsed model and raw bytes are compressed with lz4 instead of pglz when the server
-- supports it: pglz was ~6% of Postgres's CPU per ingested message (the row is over the TOAST threshold).
-- PGlite is built without lz4 (feature_not_supported) and keeps pglz.
DO $$
BEGIN
  ALTER TABLE "messages" ALTER COLUMN "parsed" SET COMPRESSION lz4;
  ALTER TABLE "messages" ALTER COLUMN "raw_bytes" SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
  NULL;
END $$;
