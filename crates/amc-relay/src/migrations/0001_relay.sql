-- The agent relay: private threads shared by capability tokens.
-- Every statement is IF NOT EXISTS: a database made before the relay had its own crate
-- already has these tables (from the core's old migration 0002), and keeps them.
-- Principals are `agent:<id>` for agents and `person` for the person (through the tray).

CREATE TABLE IF NOT EXISTS relay_threads (
    id          TEXT PRIMARY KEY,                     -- UUID
    title       TEXT NOT NULL,
    owner       TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    latest_seq  INTEGER NOT NULL DEFAULT 0,
    create_key  TEXT NOT NULL,                        -- the owner's idempotency key
    UNIQUE (owner, create_key)
);

CREATE TABLE IF NOT EXISTS relay_members (
    thread_id  TEXT NOT NULL REFERENCES relay_threads (id),
    principal  TEXT NOT NULL,
    access     TEXT NOT NULL CHECK (access IN ('owner', 'write', 'read')),
    joined_at  INTEGER NOT NULL,
    PRIMARY KEY (thread_id, principal)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS relay_members_by_principal ON relay_members (principal, thread_id);

-- Read capabilities (reusable) and write invitations (single use). Only hashes are kept.
CREATE TABLE IF NOT EXISTS relay_tokens (
    id          TEXT PRIMARY KEY,                     -- inv_<ULID>, safe to show
    thread_id   TEXT NOT NULL REFERENCES relay_threads (id),
    kind        TEXT NOT NULL CHECK (kind IN ('read', 'write')),
    token_hash  BLOB NOT NULL UNIQUE,
    created_by  TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER,
    revoked_at  INTEGER,
    used_by     TEXT,
    used_at     INTEGER
);
CREATE INDEX IF NOT EXISTS relay_tokens_by_thread ON relay_tokens (thread_id, created_at);

CREATE TABLE IF NOT EXISTS relay_messages (
    thread_id     TEXT NOT NULL REFERENCES relay_threads (id),
    seq           INTEGER NOT NULL,
    author        TEXT NOT NULL,
    body          TEXT NOT NULL,
    reply_to_seq  INTEGER,
    created_at    INTEGER NOT NULL,
    idem_key      TEXT NOT NULL,
    request_hash  BLOB NOT NULL,
    PRIMARY KEY (thread_id, seq)
) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS relay_messages_by_idempotency ON relay_messages (author, thread_id, idem_key);

-- Titles (seq 0) and bodies, for search_threads.
CREATE VIRTUAL TABLE IF NOT EXISTS relay_fts USING fts5 (
    thread_id UNINDEXED,
    seq UNINDEXED,
    text,
    tokenize = 'unicode61 remove_diacritics 2'
);

-- The secret that signs cursors; a database from before kept it in `settings`.
CREATE TABLE IF NOT EXISTS relay_keys (
    name   TEXT PRIMARY KEY,
    value  TEXT NOT NULL
) WITHOUT ROWID;
INSERT OR IGNORE INTO relay_keys (name, value)
    SELECT 'cursor', value FROM settings WHERE key = 'relay_cursor_key';
DELETE FROM settings WHERE key = 'relay_cursor_key';
