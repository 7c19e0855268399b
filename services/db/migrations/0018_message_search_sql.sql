-- Full-text search moves off the intake's path: the documents live in `message_search` (filled in
-- batches by the search indexer from `message_search_queue`) instead of an expression index on
-- `messages`, whose upkeep (to_tsvector over the body plus a GIN insert) was the largest part of the
-- cost of storing a small message. Every message stored so far is queued for the indexer.
DROP INDEX IF EXISTS messages_search_idx;
--> statement-breakpoint
INSERT INTO message_search_queue (message_pk) SELECT id FROM messages ON CONFLICT DO NOTHING;
