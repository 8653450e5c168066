-- The contextual word pieces of a note's text, by a local model (recall's token matching:
-- see src/embed/tokens.rs). Derived from the note: dropped with it, and when its text
-- changes; the engine makes them when it writes or edits a note, and `distill` (or the
-- background run after a start) makes those that are missing.
CREATE TABLE note_pieces (
    note_id INTEGER PRIMARY KEY REFERENCES notes (id) ON DELETE CASCADE,
    model   TEXT    NOT NULL,
    pieces  BLOB    NOT NULL
);

CREATE TRIGGER note_pieces_text AFTER UPDATE OF intent, delta ON notes BEGIN
    DELETE FROM note_pieces WHERE note_id = new.id;
END;
