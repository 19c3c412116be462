-- What the person says holds no one-time code: kept for that message, so agents are given
-- it whole and no rule finds a secret in it again (`messages.not_a_code`, when they said
-- so), and a local report of what the person said, with the rules that had found
-- something, so they can see which rules err. Taking it back removes both.
ALTER TABLE messages ADD COLUMN not_a_code INTEGER;

CREATE TABLE not_a_code_report (
    message_id TEXT PRIMARY KEY,
    rules      TEXT NOT NULL,
    marked_at  INTEGER NOT NULL
) STRICT;
