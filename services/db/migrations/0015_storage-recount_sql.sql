-- Recounts the storage accounted to each message and project from what is stored (docs/ingest.md,
-- "Storage quota"). Messages stored before the parsed form and the webhook bodies were counted hold
-- only their raw size and attachments: they get the JSON text of `parsed` and their events' bodies
-- added. Every message gets the captures of its attempts, which were not counted before. Each
-- project's usage is then the sum over its messages.
with counted as (
  select m.id,
    m.raw_size_bytes + coalesce((
      select sum(d.size) from (
        select distinct on (coalesce(nullif(a.sha256, ''), a.attachment_id)) a.size
        from attachments a where a.message_pk = m.id
        order by coalesce(nullif(a.sha256, ''), a.attachment_id)) d), 0) as base,
    coalesce((select sum(octet_length(e.body)) from events e where e.message_pk = m.id), 0) as bodies,
    coalesce((
      select sum(octet_length(t.request_capture::text) + octet_length(t.response_capture::text))
      from attempts t join events e on e.id = t.event_id where e.message_pk = m.id), 0) as captures
  from messages m
)
update messages m set stored_bytes =
  case when m.stored_bytes <= c.base then c.base + octet_length(m.parsed::text) + c.bodies
    else m.stored_bytes end + c.captures
from counted c where c.id = m.id;
--> statement-breakpoint
update projects p set storage_bytes = coalesce((select sum(m.stored_bytes) from messages m where m.project_id = p.id), 0);
