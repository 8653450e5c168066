-- A note's trust (docs/protocol.md, "Use and trust"): trusted when a person wrote, edited,
-- pinned, accepted or confirmed it, or when a session other than the one that wrote it used
-- it; unverified otherwise. Both facts are kept beside the note's evidence (0012), so that
-- they travel with its counts (export, team sync) and no rebuild of `notes` is needed.
ALTER TABLE note_evidence ADD COLUMN vouched INTEGER NOT NULL DEFAULT 0;
-- sessions other than the writer's (`notes.session_id`; every session when that is not
-- known) that used the note
ALTER TABLE note_evidence ADD COLUMN used_elsewhere INTEGER NOT NULL DEFAULT 0;
