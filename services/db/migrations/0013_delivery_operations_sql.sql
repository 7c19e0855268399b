-- Attempts recorded before attempts kept their endpoint: take it from the event's route snapshot, so
-- the endpoint health window covers them too.
UPDATE "attempts" a SET "endpoint_id" = e."route_snapshot"->>'endpoint_id'
FROM "events" e
WHERE e."id" = a."event_id" AND a."endpoint_id" IS NULL;
