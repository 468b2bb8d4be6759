-- +goose Up
-- A signed-in panel session. The cookie holds a random id; only its SHA-256
-- is stored, so a copy of the database cannot be replayed as a cookie.
-- Signing out sets revoked_at; the row stays until it expires.
CREATE TABLE admin_sessions (
    id_sha256   TEXT PRIMARY KEY,
    actor       TEXT NOT NULL,
    csrf_token  TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL,
    revoked_at  TIMESTAMPTZ
);
CREATE INDEX admin_sessions_expires ON admin_sessions (expires_at);

-- A draft kept for a signed-in session when a save was refused because the
-- configuration moved on: the form as it was posted, and the revision it was
-- based on, so that it survives a reload and can be rebased.
CREATE TABLE admin_drafts (
    session_sha256  TEXT NOT NULL REFERENCES admin_sessions (id_sha256) ON DELETE CASCADE,
    page            TEXT NOT NULL,
    base_revision   BIGINT NOT NULL,
    form            TEXT NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (session_sha256, page)
);

-- Who did what in the panel beyond prompt saves (which their versions
-- record): signing in and out, pausing and resuming Tickets.
CREATE TABLE admin_audit (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    created_at  TIMESTAMPTZ NOT NULL,
    actor       TEXT NOT NULL,
    action      TEXT NOT NULL,
    target      TEXT NOT NULL DEFAULT '',
    detail      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX admin_audit_created ON admin_audit (created_at);

-- +goose Down
DROP TABLE admin_audit;
DROP TABLE admin_drafts;
DROP TABLE admin_sessions;
