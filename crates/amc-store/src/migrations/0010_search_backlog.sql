-- Search, part two.
--
-- 1. Substrings in scripts written without spaces. unicode61 makes one token of a whole
--    run of Chinese, Japanese or Thai ("東京に行く"), so a word inside it is never found.
--    Messages holding such a script are also kept in `messages_cjk`, a trigram index,
--    where any substring of three characters or more is a phrase query (shorter ones are
--    scanned). The GLOB below is `store::search::SPACELESS`; a test holds them equal.
--
-- 2. The backlog. The messages stored before the index existed are indexed by a
--    background task, newest first, in small transactions, with its progress shown;
--    opening the database never waits for it. `search_backlog` holds the range of rowids
--    not indexed yet (lo..=hi); the triggers leave those rows alone, and rows written
--    later always have larger rowids (ARCHITECTURE.md: rowids only grow).
CREATE VIRTUAL TABLE IF NOT EXISTS messages_cjk USING fts5(text, tokenize = 'trigram');

CREATE TABLE search_backlog (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    lo INTEGER NOT NULL,
    hi INTEGER NOT NULL,
    total INTEGER NOT NULL,
    done INTEGER NOT NULL DEFAULT 0
) STRICT;

-- Start over: a database indexed by an earlier 0009 is indexed again like any other.
INSERT INTO messages_fts (messages_fts) VALUES ('delete-all');
INSERT INTO search_backlog (id, lo, hi, total)
    SELECT 1, min(rowid), max(rowid), count(*) FROM messages HAVING count(*) > 0;

DROP TRIGGER messages_fts_insert;
DROP TRIGGER messages_fts_delete;
DROP TRIGGER messages_fts_update;

CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages WHEN NOT new.unsent BEGIN
    INSERT INTO messages_fts (rowid, text) VALUES (new.rowid, new.text);
    INSERT INTO messages_cjk (rowid, text) SELECT new.rowid, new.text
        WHERE new.text GLOB '*[฀-໿က-႟ក-៿぀-ヿ㄀-㆏㐀-䶿一-鿿가-힯豈-﫿ｦ-ﾟ𠀀-𯿿]*';
END;

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
