-- One channel per iMessage conversation, whatever service its chats were on: chat.db can
-- hold `iMessage;-;X`, `SMS;-;X` and macOS 26's `any;-;X` for one person. Channels are now
-- keyed `any;<kind>;<identifier>`. Channels that come to share a key are merged into the
-- oldest, which takes the most careful settings of the group: blocked over pending over
-- allowed, the least history released, the strictest send policy.
CREATE TEMP TABLE conversation AS
    SELECT id, 'any;' || substr(platform_id, instr(platform_id, ';') + 1) AS key,
           state, visible_from, stored_from, send_policy, created_at, last_message_at
    FROM channels WHERE source = 'imessage' AND instr(platform_id, ';') > 0;

CREATE TEMP TABLE merged AS
    SELECT key,
           (SELECT o.id FROM conversation o WHERE o.key = c.key ORDER BY o.created_at, o.id LIMIT 1) AS id,
           CASE WHEN max(state = 'blocked') THEN 'blocked'
                WHEN max(state = 'pending') THEN 'pending' ELSE 'allowed' END AS state,
           max(visible_from) AS visible_from,
           max(stored_from) AS stored_from,
           CASE WHEN max(send_policy = 'read_only') THEN 'read_only'
                WHEN max(send_policy = 'review') THEN 'review' ELSE 'auto' END AS send_policy,
           max(last_message_at) AS last_message_at
    FROM conversation c GROUP BY key;

CREATE TEMP TABLE moved AS
    SELECT c.id AS old_id, m.id AS new_id FROM conversation c JOIN merged m ON m.key = c.key WHERE c.id != m.id;

UPDATE messages SET channel_id = (SELECT new_id FROM moved WHERE old_id = messages.channel_id)
    WHERE channel_id IN (SELECT old_id FROM moved);
UPDATE outbox SET channel_id = (SELECT new_id FROM moved WHERE old_id = outbox.channel_id)
    WHERE channel_id IN (SELECT old_id FROM moved);
DELETE FROM channels WHERE id IN (SELECT old_id FROM moved);

UPDATE channels SET
    platform_id = (SELECT key FROM merged WHERE merged.id = channels.id),
    state = (SELECT state FROM merged WHERE merged.id = channels.id),
    visible_from = (SELECT visible_from FROM merged WHERE merged.id = channels.id),
    stored_from = (SELECT stored_from FROM merged WHERE merged.id = channels.id),
    send_policy = (SELECT send_policy FROM merged WHERE merged.id = channels.id),
    last_message_at = (SELECT last_message_at FROM merged WHERE merged.id = channels.id)
    WHERE id IN (SELECT id FROM merged);

DROP TABLE moved;
DROP TABLE merged;
DROP TABLE conversation;
