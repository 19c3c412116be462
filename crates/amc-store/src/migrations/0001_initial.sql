-- AMC's first schema. Times are milliseconds since the Unix epoch, UTC.

CREATE TABLE channels (
    id              TEXT PRIMARY KEY,                 -- ch_<ULID>
    source          TEXT NOT NULL CHECK (source IN ('imessage', 'discord')),
    platform_id     TEXT NOT NULL,
    name            TEXT NOT NULL,
    kind            TEXT NOT NULL CHECK (kind IN ('dm', 'group')),
    state           TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'allowed', 'blocked')),
    -- While allowed, messages with sent_at >= visible_from reach agents; NULL releases all history.
    visible_from    INTEGER,
    send_policy     TEXT NOT NULL DEFAULT 'review' CHECK (send_policy IN ('read_only', 'review', 'auto')),
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    last_message_at INTEGER,
    UNIQUE (source, platform_id)
);

CREATE TABLE messages (
    id                   TEXT PRIMARY KEY,            -- msg_<ULID>
    channel_id           TEXT NOT NULL REFERENCES channels (id),
    platform_id          TEXT NOT NULL,
    source               TEXT NOT NULL,
    sender_id            TEXT NOT NULL,
    sender_name          TEXT,
    is_self              INTEGER NOT NULL DEFAULT 0,
    text                 TEXT NOT NULL DEFAULT '',
    sent_at              INTEGER NOT NULL,
    edited_at            INTEGER,
    unsent               INTEGER NOT NULL DEFAULT 0,
    reply_to             TEXT,                        -- msg_<ULID> once resolved
    reply_to_platform_id TEXT,
    reactions            TEXT NOT NULL DEFAULT '[]',  -- JSON array of Reaction
    direction            TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    agent_id             TEXT,
    ingested_at          INTEGER NOT NULL,
    UNIQUE (source, platform_id)
);
-- Context and per-channel unread walk this one.
CREATE INDEX messages_by_channel ON messages (channel_id, sent_at, id);
-- Unread walks this one in (sent_at, id) order; it covers the filter columns.
CREATE INDEX messages_by_time ON messages (sent_at, id, channel_id, direction);
CREATE INDEX messages_by_reply_platform_id ON messages (reply_to_platform_id) WHERE reply_to IS NULL AND reply_to_platform_id IS NOT NULL;

CREATE TABLE attachments (
    id          TEXT PRIMARY KEY,                     -- att_<ULID>
    message_id  TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    platform_id TEXT,
    filename    TEXT,
    mime_type   TEXT,
    size_bytes  INTEGER,
    local_path  TEXT,
    remote_url  TEXT,
    available   INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX attachments_by_message ON attachments (message_id);

CREATE TABLE agents (
    id              TEXT PRIMARY KEY,
    token_hash      BLOB NOT NULL UNIQUE,             -- SHA-256 of the token
    created_at      INTEGER NOT NULL,
    last_seen_at    INTEGER,
    revoked_at      INTEGER,
    -- No visible inbound message before (floor_at, floor_id) is unread for this agent.
    -- An optimisation for list_unread, lowered whenever that could stop being true.
    floor_at        INTEGER NOT NULL DEFAULT -9223372036854775808,
    floor_id        TEXT NOT NULL DEFAULT ''
);

CREATE TABLE read_state (
    agent_id   TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    message_id TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    read_at    INTEGER NOT NULL,
    PRIMARY KEY (agent_id, message_id)
) WITHOUT ROWID;
CREATE INDEX read_state_by_message ON read_state (message_id);

CREATE TABLE outbox (
    id            TEXT PRIMARY KEY,                   -- msg_<ULID>, the message id once sent
    agent_id      TEXT NOT NULL,
    channel_id    TEXT NOT NULL REFERENCES channels (id),
    text          TEXT NOT NULL,
    reply_to      TEXT,
    attachments   TEXT NOT NULL DEFAULT '[]',         -- JSON array of StagedAttachment
    status        TEXT NOT NULL CHECK (status IN ('held', 'sending', 'sent', 'failed', 'rejected', 'unknown')),
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    sent_at       INTEGER,
    platform_id   TEXT,
    error_code    TEXT,
    error_message TEXT,
    retry_after_at INTEGER                            -- a platform's RATE_LIMITED: when to retry
);
CREATE INDEX outbox_by_status ON outbox (status, created_at);
CREATE INDEX outbox_by_created ON outbox (created_at);

CREATE TABLE idempotency (
    agent_id     TEXT NOT NULL,
    key          TEXT NOT NULL,
    request_hash BLOB NOT NULL,
    outbox_id    TEXT NOT NULL REFERENCES outbox (id),
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (agent_id, key)
) WITHOUT ROWID;
CREATE INDEX idempotency_by_created ON idempotency (created_at);

-- Per-source checkpoints (for example iMessage's ROWID high-water mark), written in the
-- same transaction as the messages they cover.
CREATE TABLE source_state (
    source TEXT NOT NULL,
    key    TEXT NOT NULL,
    value  TEXT NOT NULL,
    PRIMARY KEY (source, key)
) WITHOUT ROWID;

-- Bumped by every change that can make an older message unread (ingest, approval), so a
-- reader that advances an agent's unread floor can tell whether its snapshot is still true.
CREATE TABLE unread_generation (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    value INTEGER NOT NULL
);
INSERT INTO unread_generation (id, value) VALUES (1, 0);

-- The person's switches that outlive a restart (for example: agents paused).
CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
