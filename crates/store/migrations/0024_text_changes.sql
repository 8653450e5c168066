-- How many times a note's text changed or a note was deleted: the changes that can lower a
-- word's count in the full-text index (an insert only adds rows, past the highest id). Recall
-- keeps the store's word counts across inserts while this count stays (memory/lexicon:
-- `Frequent`).
CREATE TABLE text_changes (n INTEGER NOT NULL);
INSERT INTO text_changes (n) VALUES (0);

CREATE TRIGGER text_changes_edit AFTER UPDATE OF intent, delta ON notes
WHEN new.intent IS NOT old.intent OR new.delta IS NOT old.delta
BEGIN
    UPDATE text_changes SET n = n + 1;
END;

CREATE TRIGGER text_changes_delete AFTER DELETE ON notes
BEGIN
    UPDATE text_changes SET n = n + 1;
END;
