-- Threads inside a channel (Discord threads and forum posts): their messages are stored
-- in the parent channel, each naming its thread, so the person's approval of the parent
-- covers them. `threads` keeps each thread's current name.
ALTER TABLE messages ADD COLUMN thread_id TEXT;

CREATE TABLE threads (
    source TEXT NOT NULL,
    platform_id TEXT NOT NULL,
    channel_id TEXT NOT NULL REFERENCES channels (id),
    name TEXT NOT NULL,
    PRIMARY KEY (source, platform_id)
) STRICT;

-- A thread's newest stored message, for the catch-up after a disconnection.
CREATE INDEX messages_by_thread ON messages (thread_id, sent_at) WHERE thread_id IS NOT NULL;
