-- +goose Up
-- New bodies are stored as S2 blocks (see internal/bodycodec); rows stored
-- as zstd frames or as received keep their encoding and read as before.
-- SQLite cannot change a column's CHECK in place: the column is made
-- again with the wider one, its values carried over.
ALTER TABLE deliveries ADD COLUMN body_codec TEXT NOT NULL DEFAULT 'identity'
    CHECK (body_codec IN ('identity', 'zstd', 's2'));
UPDATE deliveries SET body_codec = body_encoding WHERE body_encoding <> 'identity';
ALTER TABLE deliveries DROP COLUMN body_encoding;
ALTER TABLE deliveries RENAME COLUMN body_codec TO body_encoding;

-- +goose Down
-- The release before reads zstd and bodies as received, not S2: those
-- bodies are emptied rather than misread, and say so.
UPDATE deliveries SET body = X'', body_encoding = 'identity',
    error = CASE WHEN error = '' THEN 'body dropped: it was stored as s2' ELSE error END
    WHERE body_encoding = 's2';
ALTER TABLE deliveries ADD COLUMN body_codec TEXT NOT NULL DEFAULT 'identity'
    CHECK (body_codec IN ('identity', 'zstd'));
UPDATE deliveries SET body_codec = body_encoding WHERE body_encoding <> 'identity';
ALTER TABLE deliveries DROP COLUMN body_encoding;
ALTER TABLE deliveries RENAME COLUMN body_codec TO body_encoding;
