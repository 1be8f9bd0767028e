-- docsbot schema, version 1: libraries → versions → pages → documents (chunks), and crawl_runs.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE libraries (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name       text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE versions (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    library_id      bigint NOT NULL REFERENCES libraries (id) ON DELETE CASCADE,
    name            text NOT NULL DEFAULT '',
    root_url        text NOT NULL,
    settings        jsonb NOT NULL DEFAULT '{}',
    -- One model per index: every vector of the version comes from this model.
    embedding_model text,
    embedding_dim   integer,
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (library_id, name)
);

CREATE TABLE pages (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    version_id    bigint NOT NULL REFERENCES versions (id) ON DELETE CASCADE,
    url           text NOT NULL,
    canonical_url text,
    title         text NOT NULL DEFAULT '',
    -- Validators exactly as the server sent them (RFC 9110 §8.8), sent back byte for byte.
    etag          text,
    last_modified text,
    content_type  text,
    content_hash  text,
    depth         integer NOT NULL,
    links         text[] NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (version_id, url)
);

CREATE FUNCTION docsbot_touch_updated_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.updated_at := now();
    RETURN NEW;
END $$;

CREATE TRIGGER pages_updated_at BEFORE UPDATE ON pages
    FOR EACH ROW EXECUTE FUNCTION docsbot_touch_updated_at();

-- Chunks. `embedding` has no fixed dimension here: the HNSW index is an expression index per dimension
-- (docsbot.db.ensure_vector_index), the pgvector way to hold several models' dimensions in one table.
CREATE TABLE documents (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    page_id    bigint NOT NULL REFERENCES pages (id) ON DELETE CASCADE,
    content    text NOT NULL,
    metadata   jsonb NOT NULL DEFAULT '{}',
    sort_order integer NOT NULL,
    embedding  vector NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX documents_page_id_idx ON documents (page_id, sort_order);
CREATE INDEX documents_content_fts_idx ON documents USING gin (to_tsvector('english', content));

CREATE TABLE crawl_runs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    version_id  bigint NOT NULL REFERENCES versions (id) ON DELETE CASCADE,
    mode        text NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    stats       jsonb NOT NULL DEFAULT '{}'
);

CREATE INDEX crawl_runs_version_idx ON crawl_runs (version_id, started_at DESC);
