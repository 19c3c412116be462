-- A message is found by its platform id through a 64-bit hash of it (`platform_key`,
-- computed by SQLite from the source and the platform id with AMC's function
-- `amc_platform_key`), instead of a unique index on the text itself. Platform ids come
-- in no order (iMessage's guids are random UUIDs), so every batch of an import wrote
-- pages all over that index: an index of 8-byte keys is a fifth of its size and costs
-- a first import about 40 % less. The hash is not unique: every lookup compares the
-- source and the platform id too, and the ingest looks a message up before it inserts
-- one, so a message is still stored once.
--
-- SQLite cannot drop a table's UNIQUE constraint, so the table is rebuilt as SQLite's
-- documentation describes (https://www.sqlite.org/lang_altertable.html#otheralter):
-- the migration runs with foreign keys off and checks them before it commits. Rowids
-- are kept, so the search index (keyed by rowid) and its backlog stay true.
CREATE TABLE messages_rebuilt (
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
    thread_id            TEXT,
    platform_key         INTEGER NOT NULL GENERATED ALWAYS AS (amc_platform_key(source, platform_id)) STORED
);

INSERT INTO messages_rebuilt (rowid, id, channel_id, platform_id, source, sender_id, sender_name, is_self, text,
    sent_at, edited_at, unsent, reply_to, reply_to_platform_id, reactions, direction, agent_id, ingested_at, thread_id)
SELECT rowid, id, channel_id, platform_id, source, sender_id, sender_name, is_self, text,
    sent_at, edited_at, unsent, reply_to, reply_to_platform_id, reactions, direction, agent_id, ingested_at, thread_id
FROM messages ORDER BY rowid;

DROP TABLE messages;
ALTER TABLE messages_rebuilt RENAME TO messages;

-- Context and per-channel unread walk this one.
CREATE INDEX messages_by_channel ON messages (channel_id, sent_at, id);
-- Unread walks this one in (sent_at, id) order; it covers the filter columns.
CREATE INDEX messages_by_time ON messages (sent_at, id, channel_id, direction);
CREATE INDEX messages_by_reply_platform_id ON messages (reply_to_platform_id) WHERE reply_to IS NULL AND reply_to_platform_id IS NOT NULL;
-- A thread's newest stored message, for the catch-up after a disconnection.
CREATE INDEX messages_by_thread ON messages (thread_id, sent_at) WHERE thread_id IS NOT NULL;
CREATE INDEX messages_by_platform_key ON messages (platform_key);

-- The search index's triggers, as migrations 0010 and 0013 wrote them (a table's
-- triggers go with it), both with 0010's script ranges (0013 had one range's first
-- character wrong: U+8C48 for U+F900).
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

CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages
WHEN NOT new.unsent AND NOT EXISTS (SELECT 1 FROM search_backlog WHERE new.rowid BETWEEN lo AND hi) BEGIN
    INSERT INTO messages_fts (rowid, text) VALUES (new.rowid, new.text);
    INSERT INTO messages_cjk (rowid, text) SELECT new.rowid, new.text
        WHERE new.text GLOB '*[฀-໿က-႟ក-៿぀-ヿ㄀-㆏㐀-䶿一-鿿가-힯豈-﫿ｦ-ﾟ𠀀-𯿿]*';
END;
