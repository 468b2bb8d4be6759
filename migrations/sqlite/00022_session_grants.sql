-- +goose Up
-- A panel session rests on what granted it, checked again on every
-- request: grant is 'token' (mark is a slow keyed fingerprint of the admin
-- token, never the token) or 'github' (login, with the person and role the
-- sign-in found). A session from before, with no grant, no longer counts.
-- last_seen_at is when it was last used, for the idle limit.
ALTER TABLE admin_sessions ADD COLUMN grant_kind TEXT NOT NULL DEFAULT '';
ALTER TABLE admin_sessions ADD COLUMN grant_mark TEXT NOT NULL DEFAULT '';
ALTER TABLE admin_sessions ADD COLUMN login TEXT NOT NULL DEFAULT '';
ALTER TABLE admin_sessions ADD COLUMN last_seen_at TIMESTAMP;

-- +goose Down
ALTER TABLE admin_sessions DROP COLUMN last_seen_at;
ALTER TABLE admin_sessions DROP COLUMN login;
ALTER TABLE admin_sessions DROP COLUMN grant_mark;
ALTER TABLE admin_sessions DROP COLUMN grant_kind;
