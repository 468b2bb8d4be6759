-- +goose Up
-- A delivery's body is stored compressed when that pays (see
-- internal/bodycodec); body_encoding says how to read it back. Rows
-- stored before keep their bodies as received.
ALTER TABLE deliveries ADD COLUMN body_encoding TEXT NOT NULL DEFAULT 'identity'
    CHECK (body_encoding IN ('identity', 'zstd'));
-- A compressed body (2 to 3 KB for a typical payload) is kept in the row:
-- by default PostgreSQL would try to compress it again, fail, and move it
-- to the TOAST table, two more rows and index entries per delivery.
ALTER TABLE deliveries SET (toast_tuple_target = 8160);
ALTER TABLE deliveries ALTER COLUMN body SET STORAGE EXTERNAL;

-- +goose Down
ALTER TABLE deliveries ALTER COLUMN body SET STORAGE EXTENDED;
ALTER TABLE deliveries RESET (toast_tuple_target);
-- An earlier release reads every body as received: compressed ones are
-- emptied rather than misread, and say so.
UPDATE deliveries SET body = '', error = CASE WHEN error = '' THEN 'body dropped: it was stored compressed' ELSE error END
    WHERE body_encoding <> 'identity';
ALTER TABLE deliveries DROP COLUMN body_encoding;
