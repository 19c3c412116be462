-- A channel the platform says no longer exists, or no longer lets AMC in (Discord: the
-- channel was deleted, or the bot was removed from its server): when, and why in words
-- for the person. Its history stays readable; sends to it are refused with CHANNEL_GONE.
-- Anything the platform says about the channel later clears it.
ALTER TABLE channels ADD COLUMN gone_at INTEGER;
ALTER TABLE channels ADD COLUMN gone_reason TEXT;
