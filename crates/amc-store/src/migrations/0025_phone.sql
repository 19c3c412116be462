-- Approvals from the person's phone: each held send and tool request AMC asked about in each
-- of the person's own conversations (their iMessage self-chat, their DM with the Discord bot),
-- with the short code the person answers with, and where every decision was made.
--
-- `state`: `asking` (being sent), `asked` (the phone has it), `skipped` (over the limit a
-- minute; only counted on the phone), `settled` (decided, wherever), `expired`, `withdrawn`
-- (AMC paused, the agent revoked), `failed` (the phone could not be told).
-- `code` stays unique while the ask is kept, so a late answer never reaches a newer ask.
-- `prompt_platform_id`: the asking message's id on the platform (its chat.db guid), which
-- a tapback names.
CREATE TABLE phone_asks (
    id                 TEXT PRIMARY KEY,              -- ask_<ULID>
    code               TEXT NOT NULL UNIQUE,
    kind               TEXT NOT NULL CHECK (kind IN ('send', 'tool')),
    subject            TEXT NOT NULL,                 -- the send's or the tool request's id
    channel_id         TEXT NOT NULL,
    state              TEXT NOT NULL
        CHECK (state IN ('asking', 'asked', 'skipped', 'settled', 'expired', 'withdrawn', 'failed')),
    prompt_platform_id TEXT,
    asked_at           INTEGER NOT NULL,
    expires_at         INTEGER NOT NULL,
    settled_at         INTEGER,
    UNIQUE (kind, subject, channel_id)
);
CREATE INDEX phone_asks_by_prompt ON phone_asks (prompt_platform_id) WHERE prompt_platform_id IS NOT NULL;
CREATE INDEX phone_asks_open ON phone_asks (expires_at) WHERE state IN ('asking', 'asked');

-- Where the person decided: `mac` (the window or `amc`), `phone_imessage`, `phone_discord`;
-- NULL before.
ALTER TABLE outbox ADD COLUMN decided_via TEXT;
ALTER TABLE tool_requests ADD COLUMN decided_via TEXT;
