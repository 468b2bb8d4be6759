-- +goose Up
-- A delivery's body is stored compressed when that pays (see
-- internal/bodycodec); body_encoding says how to read it back. Rows
-- stored before keep their bodies as received.
ALTER TABLE deliveries ADD COLUMN body_encoding TEXT NOT NULL DEFAULT 'identity'
    CHECK (body_encoding IN ('identity', 'zstd'));

-- +goose Down
-- An earlier release reads every body as received: compressed ones are
-- emptied rather than misread, and say so.
UPDATE deliveries SET body = X'', error = CASE WHEN error = '' THEN 'body dropped: it was stored compressed' ELSE error END
    WHERE body_encoding <> 'identity';
ALTER TABLE deliveries DROP COLUMN body_encoding;
