-- A note's summed counts read by id without summing every note (0017's view grouped the whole
-- of both tables for each lookup): every note with the team's counts has a local row too (the
-- pull makes one, at zero), and the view adds the other machines' rows of that note to it,
-- found by the primary key of `note_evidence_remote`.
INSERT INTO note_evidence (note_id)
SELECT DISTINCT note_id FROM note_evidence_remote WHERE note_id NOT IN (SELECT note_id FROM note_evidence);
DROP VIEW note_evidence_all;
CREATE VIEW note_evidence_all AS
SELECT e.note_id,
       e.shown + (SELECT coalesce(sum(r.shown), 0) FROM note_evidence_remote r WHERE r.note_id = e.note_id) AS shown,
       e.used + (SELECT coalesce(sum(r.used), 0) FROM note_evidence_remote r WHERE r.note_id = e.note_id) AS used,
       e.ignored + (SELECT coalesce(sum(r.ignored), 0) FROM note_evidence_remote r WHERE r.note_id = e.note_id)
           AS ignored,
       nullif(max(coalesce(e.used_at, 0),
                  (SELECT coalesce(max(r.used_at), 0) FROM note_evidence_remote r WHERE r.note_id = e.note_id)), 0)
           AS used_at,
       max(e.vouched, (SELECT coalesce(max(r.vouched), 0) FROM note_evidence_remote r WHERE r.note_id = e.note_id))
           AS vouched,
       e.used_elsewhere
           + (SELECT coalesce(sum(r.used_elsewhere), 0) FROM note_evidence_remote r WHERE r.note_id = e.note_id)
           AS used_elsewhere
FROM note_evidence e;
