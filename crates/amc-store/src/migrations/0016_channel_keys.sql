-- A message names its channel by the channel's integer key instead of its `ch_<ULID>`
-- text id. The id was stored three times per message (in the row and in the two indexes
-- that walk messages by channel and by time), 29 bytes each; the key takes one or two.
-- A store of 250,000 iMessages shrinks by about a fifth, every insert writes smaller
-- index entries, and the channel of each message an agent's unread list looks at is
-- found by its rowid instead of through the channels' text index.
--
-- `channels.key` is the channel's rowid made a column (INTEGER PRIMARY KEY), so it never
-- changes and a foreign key can name it; the rowids are kept. Both tables are rebuilt
-- as SQLite's documentation describes (https://www.sqlite.org/lang_altertable.html#otheralter):
-- migrations run with foreign keys off and check them before they commit. Messages keep
-- their rowids, so the search index, its backlog and the read marks stay true.
CREATE TABLE channels_keyed (
    id              TEXT NOT NULL UNIQUE,             -- ch_<ULID>
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
    stored_from     INTEGER,
    audience        TEXT NOT NULL DEFAULT 'all' CHECK (audience IN ('all', 'some')),
    gone_at         INTEGER,
    gone_reason     TEXT,
    key             INTEGER PRIMARY KEY,              -- what messages.channel holds
    UNIQUE (source, platform_id)
);

INSERT INTO channels_keyed (key, id, source, platform_id, name, kind, state, visible_from, send_policy,
    created_at, updated_at, last_message_at, stored_from, audience, gone_at, gone_reason)
SELECT rowid, id, source, platform_id, name, kind, state, visible_from, send_policy,
    created_at, updated_at, last_message_at, stored_from, audience, gone_at, gone_reason
FROM channels ORDER BY rowid;

DROP TABLE channels;
ALTER TABLE channels_keyed RENAME TO channels;

CREATE TABLE messages_keyed (
    id                   TEXT PRIMARY KEY,            -- msg_<ULID>
    channel              INTEGER NOT NULL REFERENCES channels (key),
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
    thread_id            TEXT,
    platform_key         INTEGER NOT NULL GENERATED ALWAYS AS (amc_platform_key(source, platform_id)) STORED
);

INSERT INTO messages_keyed (rowid, id, channel, platform_id, source, sender_id, sender_name, is_self, text,
    sent_at, edited_at, unsent, reply_to, reply_to_platform_id, reactions, direction, agent_id, ingested_at, thread_id)
SELECT m.rowid, m.id, c.key, m.platform_id, m.source, m.sender_id, m.sender_name, m.is_self, m.text,
    m.sent_at, m.edited_at, m.unsent, m.reply_to, m.reply_to_platform_id, m.reactions, m.direction, m.agent_id,
    m.ingested_at, m.thread_id
FROM messages m JOIN channels c ON c.id = m.channel_id ORDER BY m.rowid;

DROP TABLE messages;
ALTER TABLE messages_keyed RENAME TO messages;

-- Context and per-channel unread walk this one.
CREATE INDEX messages_by_channel ON messages (channel, sent_at, id);
-- Unread walks this one in (sent_at, id) order; it covers the filter columns.
CREATE INDEX messages_by_time ON messages (sent_at, id, channel, direction);
CREATE INDEX messages_by_reply_platform_id ON messages (reply_to_platform_id) WHERE reply_to IS NULL AND reply_to_platform_id IS NOT NULL;
-- A thread's newest stored message, for the catch-up after a disconnection.
CREATE INDEX messages_by_thread ON messages (thread_id, sent_at) WHERE thread_id IS NOT NULL;
CREATE INDEX messages_by_platform_key ON messages (platform_key);

-- The triggers that went with the table: the search index's, as 0014 wrote them, and
-- the read marks', as 0015 wrote it.
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages
WHEN NOT old.unsent AND NOT EXISTS (SELECT 1 FROM search_backlog WHERE old.rowid BETWEEN lo AND hi) BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
    DELETE FROM messages_cjk WHERE rowid = old.rowid;
END;

CREATE TRIGGER messages_fts_update AFTER UPDATE OF text, unsent ON messages
WHEN NOT EXISTS (SELECT 1 FROM search_backlog WHERE old.rowid BETWEEN lo AND hi) BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, text) SELECT 'delete', old.rowid, old.text WHERE NOT old.unsent;
    INSERT INTO messages_fts (rowid, text) SELECT new.rowid, new.text WHERE NOT new.unsent;
    DELETE FROM messages_cjk WHERE rowid = old.rowid;
    INSERT INTO messages_cjk (rowid, text) SELECT new.rowid, new.text
        WHERE NOT new.unsent AND new.text GLOB '*[฀-໿က-႟ក-៿぀-ヿ㄀-㆏㐀-䶿一-鿿가-힯豈-﫿ｦ-ﾟ𠀀-𯿿]*';
END;

CREATE TRIGGER read_marks_of_message AFTER DELETE ON messages BEGIN
    DELETE FROM read_marks WHERE message = old.rowid;
END;

-- Last, so the code that puts it back after a first import finds it here.
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages
WHEN NOT new.unsent AND NOT EXISTS (SELECT 1 FROM search_backlog WHERE new.rowid BETWEEN lo AND hi) BEGIN
    INSERT INTO messages_fts (rowid, text) VALUES (new.rowid, new.text);
    INSERT INTO messages_cjk (rowid, text) SELECT new.rowid, new.text
        WHERE new.text GLOB '*[฀-໿က-႟ក-៿぀-ヿ㄀-㆏㐀-䶿一-鿿가-힯豈-﫿ｦ-ﾟ𠀀-𯿿]*';
END;
