-- The readers rule: a send under `auto` goes out at once only when everyone it reaches
-- could already read every conversation the agent was given lately.
--
-- `channels.readers`: who, besides the person, reads a conversation, as a JSON array of
-- the platform's handles (an iMessage chat's participants, the other side of a Discord
-- DM); NULL when AMC cannot tell (a Discord server channel counts as its own readers).
-- One-to-one iMessage chats name their handle in their key, so it is filled in here.
-- `channels.open_to_anything`: the person said this channel may receive anything.
ALTER TABLE channels ADD COLUMN readers TEXT;
ALTER TABLE channels ADD COLUMN open_to_anything INTEGER NOT NULL DEFAULT 0;
UPDATE channels SET readers = json_array(lower(substr(platform_id, instr(platform_id, ';-;') + 3)))
WHERE source = 'imessage' AND kind = 'dm' AND instr(platform_id, ';-;') > 0
  AND length(platform_id) > instr(platform_id, ';-;') + 2
  AND instr(platform_id, '"') = 0 AND instr(platform_id, '\') = 0;

-- Which conversations each agent was given messages of, and when last: a channel's id, or
-- a relay thread's. `name` is the conversation's name then, for the person's Review only;
-- `readers` who read it then, as `channels` said, each handle behind its source
-- (`imessage:+15551234567`; NULL for a relay thread or when unknown), so a send's look at
-- thousands of them reads this table alone.
CREATE TABLE agent_reads (
    agent_id     TEXT NOT NULL,
    conversation TEXT NOT NULL,
    name         TEXT NOT NULL,
    read_at      INTEGER NOT NULL,
    readers      TEXT,
    PRIMARY KEY (agent_id, conversation)
) WITHOUT ROWID;

-- Why a send is held beyond its channel's policy (`crosses_conversations`), and the
-- conversations it was read from: a JSON array of {conversation, name, read_at}.
ALTER TABLE outbox ADD COLUMN held_reason TEXT;
ALTER TABLE outbox ADD COLUMN read_from TEXT;
