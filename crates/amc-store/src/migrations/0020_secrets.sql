-- Secrets, part two: the person decides who sees them, and the store knows which
-- messages hold them.
--
-- 1. Who sees one-time codes and sign-in links. No agent, unless the person shows them
--    on a channel: to every agent the channel is open to (`codes = 'shown'`), or to the
--    agents listed in `channel_code_agents` (`codes = 'some'`).
-- 2. Which messages hold them. `messages.secrets` holds the kinds a message holds, as
--    bits (1 a one-time code, 2 a sign-in link; 0 none; NULL not looked at yet), written
--    with the text. The messages stored before are looked at by a background task, newest
--    first, in small transactions, with its progress shown, as the search backlog is:
--    `secrets_backlog` holds the range of rowids not looked at yet (lo..=hi). What agents
--    are given is hidden as it is read, never from this column, so a message the backlog
--    has not reached yet is hidden all the same.
ALTER TABLE channels ADD COLUMN codes TEXT NOT NULL DEFAULT 'hidden' CHECK (codes IN ('hidden', 'shown', 'some'));

CREATE TABLE channel_code_agents (
    channel_id TEXT NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    agent_id   TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    PRIMARY KEY (channel_id, agent_id)
) WITHOUT ROWID;
CREATE INDEX channel_code_agents_by_agent ON channel_code_agents (agent_id);

ALTER TABLE messages ADD COLUMN secrets INTEGER;
CREATE INDEX messages_with_secrets ON messages (channel) WHERE secrets > 0;

CREATE TABLE secrets_backlog (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    lo INTEGER NOT NULL,
    hi INTEGER NOT NULL,
    total INTEGER NOT NULL,
    done INTEGER NOT NULL DEFAULT 0
) STRICT;

INSERT INTO secrets_backlog (id, lo, hi, total)
    SELECT 1, min(rowid), max(rowid), count(*) FROM messages HAVING count(*) > 0;
