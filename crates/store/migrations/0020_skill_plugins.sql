-- Session skills from plugin marketplaces and from chosen parts of a repository (issue 50):
-- the marketplace plugin a skill belongs to (NULL outside a marketplace), and the choices
-- (--path, --skill, --as) a source was installed with, replayed by update (JSON; '[]' = every skill).
ALTER TABLE installed_skills ADD COLUMN plugin TEXT;
ALTER TABLE skill_sources ADD COLUMN choices TEXT NOT NULL DEFAULT '[]';
