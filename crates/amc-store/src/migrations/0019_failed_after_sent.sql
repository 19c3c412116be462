-- A send the platform reported sent can fail afterwards (Messages sets `error` on a row it
-- had marked sent). Its message stays in the conversation, marked with why.
ALTER TABLE messages ADD COLUMN delivery_failed TEXT;

-- The sends reported sent, by when: a source looks at the recent ones again each time the
-- platform may have changed its mind, so this reads only those, not every send ever sent.
CREATE INDEX outbox_sent_by_time ON outbox (sent_at) WHERE status = 'sent';

-- A send's other parts, by its message: found with the send, and deleted with the message
-- (the foreign key's cascade scanned the whole table for each message deleted).
CREATE INDEX platform_aliases_by_message ON platform_aliases (message_id);
