-- A message Messages stored without a handle in a one-to-one iMessage chat is from the other
-- side: its sender is the chat's handle (the part of `<service>;-;<handle>` after `;-;`), as
-- the iMessage source names it from now on, not `unknown`. A short code's numbers in such a
-- message are then read as codes when the store's messages are classified again.
UPDATE messages
SET sender_id = (
    SELECT substr(c.platform_id, instr(c.platform_id, ';-;') + 3) FROM channels c WHERE c.key = messages.channel
)
WHERE sender_id = 'unknown' AND is_self = 0 AND source = 'imessage'
  AND channel IN (
    SELECT key FROM channels
    WHERE source = 'imessage' AND kind = 'dm' AND instr(platform_id, ';-;') > 0
      AND length(platform_id) > instr(platform_id, ';-;') + 2
  );
