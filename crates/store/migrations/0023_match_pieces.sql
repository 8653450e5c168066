-- The static table's word pieces of a note's text, as recall's token matching compares them
-- (crates/embed/src/tokens.rs, `TokenMatch::stored`): four bytes naming the table, then two
-- bytes a piece. Stored when the note is written, so that a recall reads them with the note
-- instead of tokenizing its text; derived from the note: cleared when its text changes. A note
-- without them is tokenized at recall, and the background run after a start stores them.
ALTER TABLE notes ADD COLUMN match_pieces BLOB;

-- The current notes still without them, for that run.
CREATE INDEX notes_unmatched ON notes (id) WHERE match_pieces IS NULL AND retired_at IS NULL;

-- A text update that does not bring the new text's pieces clears the old ones.
CREATE TRIGGER notes_match_pieces_text AFTER UPDATE OF intent, delta ON notes
WHEN new.match_pieces IS NOT NULL AND new.match_pieces IS old.match_pieces
     AND (new.intent IS NOT old.intent OR new.delta IS NOT old.delta)
BEGIN
    UPDATE notes SET match_pieces = NULL WHERE id = new.id;
END;
