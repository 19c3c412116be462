-- Read marks keyed by integers: the agent's rowid and the message's, instead of their
-- text ids (`agent_id`, `msg_<ULID>`). A mark with its index entry took 48 bytes; with
-- ten agents that had read everything, read state was half the store. A message's rowid
-- is never given twice (the tidy test `message_rowids_are_never_reused`; migration 0014
-- kept them), and agents are never deleted. Foreign keys cannot name a rowid: triggers
-- take a deleted message's or agent's marks with it, as `ON DELETE CASCADE` did, so a
-- rowid given again could not inherit marks either.
CREATE TABLE read_marks (
    agent   INTEGER NOT NULL,  -- agents.rowid
    message INTEGER NOT NULL,  -- messages.rowid
    read_at INTEGER NOT NULL,
    PRIMARY KEY (agent, message)
) WITHOUT ROWID;

INSERT INTO read_marks (agent, message, read_at)
SELECT a.rowid, m.rowid, r.read_at FROM read_state r
JOIN agents a ON a.id = r.agent_id JOIN messages m ON m.id = r.message_id;

DROP TABLE read_state;

-- Who read a message (the person's view).
CREATE INDEX read_marks_by_message ON read_marks (message);

CREATE TRIGGER read_marks_of_message AFTER DELETE ON messages BEGIN
    DELETE FROM read_marks WHERE message = old.rowid;
END;

CREATE TRIGGER read_marks_of_agent AFTER DELETE ON agents BEGIN
    DELETE FROM read_marks WHERE agent = old.rowid;
END;
