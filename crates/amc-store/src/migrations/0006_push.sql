-- Where each agent's push (the Claude Code channel notifications of `amc mcp`) stands.
-- Positions are message rowids: storage order, which only grows (see ARCHITECTURE.md).
-- Every message at or below an agent's floor was pushed, counted in a "more unread"
-- notice, or is not one to push to it.
CREATE TABLE IF NOT EXISTS push_floors (
    agent_id TEXT PRIMARY KEY REFERENCES agents (id) ON DELETE CASCADE,
    floor    INTEGER NOT NULL
) WITHOUT ROWID;

-- Channels pushed past their agent's floor while another channel's burst was held back:
-- every message of the channel at or below `through` was handled. Rows at or below the
-- floor are removed as the floor passes them.
CREATE TABLE IF NOT EXISTS push_channels (
    agent_id   TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    channel_id TEXT NOT NULL,
    through    INTEGER NOT NULL,
    PRIMARY KEY (agent_id, channel_id)
) WITHOUT ROWID;
