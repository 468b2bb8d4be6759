-- +goose Up
-- Every save of the team's prompt configuration is one immutable row. The
-- revision is the primary key: of two saves racing on the same base exactly
-- one can insert base+1, which is how a stale save is refused.
CREATE TABLE prompt_versions (
    revision       INTEGER PRIMARY KEY,
    predecessor    INTEGER NOT NULL,
    created_at     TIMESTAMP NOT NULL,
    origin         TEXT NOT NULL CHECK (origin IN ('panel', 'tool')),
    actor          TEXT NOT NULL,
    note           TEXT NOT NULL,
    request        TEXT NOT NULL,
    restored_from  INTEGER,
    config         TEXT NOT NULL
);

-- Every built-in text any release shipped, so that an override's base text
-- can still be shown after a newer release changed the default.
CREATE TABLE prompt_default_texts (
    sha256      TEXT PRIMARY KEY,
    key         TEXT NOT NULL,
    text        TEXT NOT NULL,
    created_at  TIMESTAMP NOT NULL
);

-- +goose Down
DROP TABLE prompt_default_texts;
DROP TABLE prompt_versions;
