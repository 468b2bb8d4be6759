-- +goose Up
-- A person of the team: the name the panel, the cards and the model show,
-- and a role (admin: may change prompts, policy and people in the panel;
-- member: may see and steer).
CREATE TABLE people (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('admin', 'member')),
    created_at  TIMESTAMP NOT NULL,
    updated_at  TIMESTAMP NOT NULL
);

-- The accounts a person is known by on each platform: kind github (the
-- login, lower-cased), feishu_open_id or feishu_union_id. An account
-- belongs to at most one person. source says who linked it: admin (panel,
-- API or import), oauth (the person proved the GitHub login) or feishu
-- (seen on a Feishu message).
CREATE TABLE person_identities (
    kind        TEXT NOT NULL CHECK (kind IN ('github', 'feishu_open_id', 'feishu_union_id')),
    value       TEXT NOT NULL,
    person_id   INTEGER NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    source      TEXT NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (kind, value)
);
CREATE INDEX person_identities_person ON person_identities (person_id);

-- A panel session knows whose it is: the person (none for the admin
-- token) and the role the sign-in gave.
ALTER TABLE admin_sessions ADD COLUMN person_id INTEGER;
ALTER TABLE admin_sessions ADD COLUMN role TEXT NOT NULL DEFAULT 'admin';

-- The repositories (owner/name, space-separated) any member of a Feishu
-- chat may open work in without a linked GitHub login.
ALTER TABLE feishu_chats ADD COLUMN repos TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE feishu_chats DROP COLUMN repos;
ALTER TABLE admin_sessions DROP COLUMN role;
ALTER TABLE admin_sessions DROP COLUMN person_id;
DROP TABLE person_identities;
DROP TABLE people;
