-- The relay's own cursor key is retired: cursors are signed under a key `amc-core` derives
-- for the relay from AMC's root secret. Cursors handed out before are refused
-- (`CURSOR_INVALID`); reading from the start again recovers.
DROP TABLE IF EXISTS relay_keys;
