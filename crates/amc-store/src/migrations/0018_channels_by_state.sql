-- The channels allowed, by audience: the unread list's walk in time order builds from it,
-- once per call, the list of channels whose messages an agent may read
-- (`visible_in_scan_to` in store/channels.rs). The key is in the index as its rowid.
CREATE INDEX channels_by_state ON channels (state, audience);
