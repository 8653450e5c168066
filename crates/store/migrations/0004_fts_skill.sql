-- The full-text index gains the note's skill as one token ('sk' + hex of the name), so that
-- the bm25 rung can AND its words with the skill and score only that skill's matches,
-- instead of every match of every skill in the store.
DROP TRIGGER notes_ai;
DROP TRIGGER notes_ad;
DROP TRIGGER notes_au;
DROP TABLE notes_fts;

ALTER TABLE notes ADD COLUMN skill_key TEXT GENERATED ALWAYS AS ('sk' || lower(hex(skill))) VIRTUAL;

CREATE VIRTUAL TABLE notes_fts USING fts5 (
    intent, delta, skill_key,
    content = 'notes', content_rowid = 'id',
    tokenize = 'porter unicode61'
);

CREATE TRIGGER notes_ai AFTER INSERT ON notes BEGIN
    INSERT INTO notes_fts (rowid, intent, delta, skill_key)
    VALUES (new.id, new.intent, new.delta, 'sk' || lower(hex(new.skill)));
END;
CREATE TRIGGER notes_ad AFTER DELETE ON notes BEGIN
    INSERT INTO notes_fts (notes_fts, rowid, intent, delta, skill_key)
    VALUES ('delete', old.id, old.intent, old.delta, 'sk' || lower(hex(old.skill)));
END;
CREATE TRIGGER notes_au AFTER UPDATE OF intent, delta ON notes BEGIN
    INSERT INTO notes_fts (notes_fts, rowid, intent, delta, skill_key)
    VALUES ('delete', old.id, old.intent, old.delta, 'sk' || lower(hex(old.skill)));
    INSERT INTO notes_fts (rowid, intent, delta, skill_key)
    VALUES (new.id, new.intent, new.delta, 'sk' || lower(hex(new.skill)));
END;

INSERT INTO notes_fts (notes_fts) VALUES ('rebuild');
