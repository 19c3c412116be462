-- A first import defers its indexing to the backlog: while it runs, the backlog's range
-- reaches past the newest message (hi is the largest rowid there is), so new rows are left
-- alone by the insert trigger too, and indexed afterwards in bulk, which costs a sixth of
-- indexing them one by one (the inbox bench). See store::search.
DROP TRIGGER messages_fts_insert;

CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages
WHEN NOT new.unsent AND NOT EXISTS (SELECT 1 FROM search_backlog WHERE new.rowid BETWEEN lo AND hi) BEGIN
    INSERT INTO messages_fts (rowid, text) VALUES (new.rowid, new.text);
    INSERT INTO messages_cjk (rowid, text) SELECT new.rowid, new.text
        WHERE new.text GLOB '*[฀-໿က-႟ក-៿぀-ヿ㄀-㆏㐀-䶿一-鿿가-힯豈-﫿ｦ-ﾟ𠀀-𯿿]*';
END;
