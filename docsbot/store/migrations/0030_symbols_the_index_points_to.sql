-- A name that several pages define has one place the site's own index points to (DocBook's indexterm: PostgreSQL's
-- PGDATABASE is defined in libpq's list of environment variables, which the book index names, and again in the
-- Environment section of createdb, dropdb, vacuumdb... each a definition of what the variable means to that tool).
-- The symbol bonus went to all eight alike, and a query of the name alone ranked libpq's page 10th. A definition
-- the index points to is `indexed`; where a name has one, the bonus is that page's (docsbot.store.ranking). Rows
-- stored before are false until their page is extracted again (extraction 10: a refresh does it).
ALTER TABLE symbols ADD COLUMN indexed boolean NOT NULL DEFAULT false;
