-- Inbox search: a full-text index of messages' text, kept by triggers in the transaction
-- that writes the message. unicode61 folds case and, with remove_diacritics 2, accents
-- ("cafe" finds "café"). An unsent message leaves the index; an edit replaces its text.
CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(
    text, content = 'messages', content_rowid = 'rowid', tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER IF NOT EXISTS messages_fts_insert AFTER INSERT ON messages WHEN NOT new.unsent BEGIN
    INSERT INTO messages_fts (rowid, text) VALUES (new.rowid, new.text);
END;

CREATE TRIGGER IF NOT EXISTS messages_fts_delete AFTER DELETE ON messages WHEN NOT old.unsent BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
END;

CREATE TRIGGER IF NOT EXISTS messages_fts_update AFTER UPDATE OF text, unsent ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, text) SELECT 'delete', old.rowid, old.text WHERE NOT old.unsent;
    INSERT INTO messages_fts (rowid, text) SELECT new.rowid, new.text WHERE NOT new.unsent;
END;

-- What is stored already is indexed in the background, newest first (migration 0010).
