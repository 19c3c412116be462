-- Claude Code's requests to use a tool, relayed by `amc mcp` for the person to answer from
-- the tray, and the person's decisions: the log of tool decisions.
CREATE TABLE IF NOT EXISTS tool_requests (
    id            TEXT PRIMARY KEY,                   -- tr_<ULID>
    agent_id      TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    session       TEXT NOT NULL,                      -- the `amc mcp` session that asked
    request_id    TEXT NOT NULL,                      -- the host's id for the request
    tool_name     TEXT NOT NULL,
    description   TEXT NOT NULL,
    input_preview TEXT NOT NULL,
    -- gone: the session ended before the person answered.
    status        TEXT NOT NULL CHECK (status IN ('pending', 'allowed', 'denied', 'gone')),
    created_at    INTEGER NOT NULL,
    decided_at    INTEGER,
    delivered_at  INTEGER,                            -- when the session was told the decision
    UNIQUE (agent_id, session, request_id)
);
CREATE INDEX IF NOT EXISTS tool_requests_by_created ON tool_requests (created_at);
CREATE INDEX IF NOT EXISTS tool_requests_open ON tool_requests (agent_id, session)
    WHERE status = 'pending' OR delivered_at IS NULL;

-- When an agent's push last told it something (the Agents screen shows it).
ALTER TABLE push_floors ADD COLUMN pushed_at INTEGER;
