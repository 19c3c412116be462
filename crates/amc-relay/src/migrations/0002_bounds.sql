-- What each principal's posts take, kept as they are written, so the bounds on one agent's
-- posts are checked on every post without counting its messages. Counted afresh here, and
-- every statement may run again (a database from before the relay's own crate has no
-- record of the relay's migrations; see 0001).
CREATE TABLE IF NOT EXISTS relay_usage (
    principal TEXT PRIMARY KEY,
    posts     INTEGER NOT NULL,
    bytes     INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO relay_usage (principal, posts, bytes)
    SELECT author, count(*), sum(length(CAST(body AS BLOB))) FROM relay_messages WHERE true GROUP BY author
    ON CONFLICT (principal) DO UPDATE SET posts = excluded.posts, bytes = excluded.bytes;

-- The tokens one principal minted, counted for its bound.
CREATE INDEX IF NOT EXISTS relay_tokens_by_creator ON relay_tokens (created_by);
