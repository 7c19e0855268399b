-- Full-text search over stored messages (GET /v1/messages?q=): subject, From/To/Cc names and
-- addresses, and up to 200,000 characters of the text body, with the `simple` configuration (no
-- stemming: any language, addresses word for word). Immutable, so it can be indexed.
CREATE FUNCTION mh_message_search(parsed jsonb) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT to_tsvector('simple'::regconfig, left(
    coalesce(parsed ->> 'subject', '') || ' ' ||
    coalesce((parsed -> 'from')::text, '') || ' ' ||
    coalesce((parsed -> 'to')::text, '') || ' ' ||
    coalesce((parsed -> 'cc')::text, '') || ' ' ||
    coalesce(parsed ->> 'text', ''),
    200000))
$$;
--> statement-breakpoint
CREATE INDEX messages_search_idx ON messages USING gin (mh_message_search(parsed));
