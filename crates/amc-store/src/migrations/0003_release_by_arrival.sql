-- "From now" goes by when AMC stored a message, not by the time the sender's clock gave it:
-- while a channel is allowed, a message reaches agents only if ingested_at >= stored_from
-- too. NULL (history released: all, or the last N days) sets no such bound.
ALTER TABLE channels ADD COLUMN stored_from INTEGER;
