-- Read marks are found by agent only. Their second index, by message, served two rare
-- questions (who read a message, and the marks of a deleted message) at the cost of a
-- second B-tree insert for every mark and about a third of the marks' room. Agents are
-- few, so both questions now ask the primary key (agent, message) once per agent.
DROP INDEX read_marks_by_message;

DROP TRIGGER read_marks_of_message;
CREATE TRIGGER read_marks_of_message AFTER DELETE ON messages BEGIN
    DELETE FROM read_marks WHERE agent IN (SELECT rowid FROM agents) AND message = old.rowid;
END;
