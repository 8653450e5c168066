-- A note's evidence travels with it on the team (team schema 0003): a note whose evidence is
-- recorded after its first push (the miner records it just after the write) sends it as an
-- `edit` of the note, which the server and the other machines take only where the note has
-- none yet. A note still waiting in the outbox carries it with its first push.
CREATE TRIGGER team_note_evidence AFTER UPDATE OF evidence ON notes
WHEN old.evidence IS NULL AND new.evidence IS NOT NULL
  AND EXISTS (SELECT 1 FROM team_state) AND NOT EXISTS (SELECT 1 FROM team_applying)
  AND EXISTS (SELECT 1 FROM team_notes WHERE note_id = new.id)
  AND NOT EXISTS (SELECT 1 FROM team_outbox WHERE note_id = new.id AND kind = 'note')
BEGIN
    INSERT INTO team_outbox (kind, note_id) VALUES ('edit', new.id);
END;
