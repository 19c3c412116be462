-- Which agents see a channel: all of them (as before, and for every channel that existed),
-- or only those listed in channel_agents. A listed agent may have a send policy of its own
-- on the channel; NULL takes the channel's.
ALTER TABLE channels ADD COLUMN audience TEXT NOT NULL DEFAULT 'all' CHECK (audience IN ('all', 'some'));

CREATE TABLE IF NOT EXISTS channel_agents (
    channel_id  TEXT NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    agent_id    TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    send_policy TEXT CHECK (send_policy IN ('read_only', 'review', 'auto')),
    PRIMARY KEY (channel_id, agent_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS channel_agents_by_agent ON channel_agents (agent_id);
