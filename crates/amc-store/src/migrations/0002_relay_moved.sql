-- The relay's tables (threads, members, tokens, messages, search) moved with the relay
-- to crates/amc-relay, which migrates them as its own part (see db.rs). Databases that
-- ran this slot before keep those tables; the relay's first migration adopts them.
SELECT 1;
