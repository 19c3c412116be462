-- A send the platform splits into several messages (Messages writes the text and each file
-- as rows of their own) is one message in AMC: the other parts' platform ids point at it,
-- so ingest never stores them a second time.
CREATE TABLE platform_aliases (
    source      TEXT NOT NULL,
    platform_id TEXT NOT NULL,
    message_id  TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    PRIMARY KEY (source, platform_id)
) WITHOUT ROWID;
