-- +goose Up
-- New bodies are stored as S2 blocks (see internal/bodycodec); rows stored
-- as zstd frames or as received keep their encoding and read as before.
ALTER TABLE deliveries DROP CONSTRAINT deliveries_body_encoding_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_body_encoding_check
    CHECK (body_encoding IN ('identity', 'zstd', 's2'));

-- +goose Down
-- The release before reads zstd and bodies as received, not S2: those
-- bodies are emptied rather than misread, and say so.
UPDATE deliveries SET body = '', body_encoding = 'identity',
    error = CASE WHEN error = '' THEN 'body dropped: it was stored as s2' ELSE error END
    WHERE body_encoding = 's2';
ALTER TABLE deliveries DROP CONSTRAINT deliveries_body_encoding_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_body_encoding_check
    CHECK (body_encoding IN ('identity', 'zstd'));
