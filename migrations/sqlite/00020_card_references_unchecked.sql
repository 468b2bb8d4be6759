-- +goose Up
-- PostgreSQL's migration 20 drops the foreign keys from cards to their
-- delivery and Thread, whose checks took row locks there. SQLite's check
-- is a plain lookup, and dropping a constraint would rebuild the table:
-- nothing changes here, and the versions of both dialects stay in step.
SELECT 1;

-- +goose Down
SELECT 1;
