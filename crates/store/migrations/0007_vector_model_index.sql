-- Which notes hold a vector of which model (and of which length), so that counting the notes
-- whose vector another model made is a few index seeks, not a scan of every note row with
-- its vector: the server asks after every request whether a background re-embedding is due
-- (measured: that scan, repeated, was the cost that grew with the store when filling it
-- through skillmem/note).
CREATE INDEX notes_by_vector_model ON notes (vector_model, length(vector)) WHERE vector IS NOT NULL;
