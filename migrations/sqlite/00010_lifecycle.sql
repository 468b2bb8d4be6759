-- +goose NO TRANSACTION
-- +goose Up
-- A Ticket stays with its work until its pull request is merged or closed:
-- the state in_review (its pull request is open), and the failure of its
-- latest Executor job (the job ran out of attempts), which a person's retry
-- clears.
--
-- SQLite cannot change a CHECK constraint in place, so the table is built
-- anew, as SQLite's documentation describes (ALTER TABLE, "other kinds of
-- table schema changes"): with foreign keys off, which only works outside a
-- transaction, so this migration opens its own; the rows of the tables that
-- refer to tickets stay as they are.
PRAGMA foreign_keys = OFF;
BEGIN;
CREATE TABLE tickets_new (
    id             INTEGER PRIMARY KEY,
    title          TEXT NOT NULL,
    state          TEXT NOT NULL CHECK (state IN ('open', 'working', 'waiting', 'paused', 'in_review', 'done', 'cancelled')),
    repo           TEXT NOT NULL DEFAULT '',
    branch         TEXT NOT NULL DEFAULT '',
    created_at     TIMESTAMP NOT NULL,
    updated_at     TIMESTAMP NOT NULL,
    origin         TEXT NOT NULL DEFAULT 'explicit' CHECK (origin IN ('explicit', 'inferred')),
    rules          TEXT NOT NULL DEFAULT '[]',
    mandate        TEXT NOT NULL DEFAULT '{}',
    proposal       BOOLEAN NOT NULL DEFAULT FALSE,
    source_card_id INTEGER REFERENCES cards (id),
    paused_by      TEXT NOT NULL DEFAULT '',
    paused_at      TIMESTAMP,
    pause_reason   TEXT NOT NULL DEFAULT '',
    resume_state   TEXT NOT NULL DEFAULT '',
    pull_number    INTEGER NOT NULL DEFAULT 0,
    stopped_by     TEXT NOT NULL DEFAULT '',
    stopped_at     TIMESTAMP,
    stop_reason    TEXT NOT NULL DEFAULT '',
    continue_by    TEXT NOT NULL DEFAULT '',
    continue_at    TIMESTAMP,
    failed_at      TIMESTAMP,
    failure        TEXT NOT NULL DEFAULT ''
);
INSERT INTO tickets_new (id, title, state, repo, branch, created_at, updated_at, origin, rules, mandate, proposal, source_card_id, paused_by, paused_at, pause_reason, resume_state, pull_number, stopped_by, stopped_at, stop_reason, continue_by, continue_at)
SELECT id, title, state, repo, branch, created_at, updated_at, origin, rules, mandate, proposal, source_card_id, paused_by, paused_at, pause_reason, resume_state, pull_number, stopped_by, stopped_at, stop_reason, continue_by, continue_at FROM tickets;
DROP TABLE tickets;
ALTER TABLE tickets_new RENAME TO tickets;
CREATE UNIQUE INDEX tickets_source_card ON tickets (source_card_id);
COMMIT;
PRAGMA foreign_keys = ON;

-- +goose Down
PRAGMA foreign_keys = OFF;
BEGIN;
CREATE TABLE tickets_old (
    id             INTEGER PRIMARY KEY,
    title          TEXT NOT NULL,
    state          TEXT NOT NULL CHECK (state IN ('open', 'working', 'waiting', 'paused', 'done', 'cancelled')),
    repo           TEXT NOT NULL DEFAULT '',
    branch         TEXT NOT NULL DEFAULT '',
    created_at     TIMESTAMP NOT NULL,
    updated_at     TIMESTAMP NOT NULL,
    origin         TEXT NOT NULL DEFAULT 'explicit' CHECK (origin IN ('explicit', 'inferred')),
    rules          TEXT NOT NULL DEFAULT '[]',
    mandate        TEXT NOT NULL DEFAULT '{}',
    proposal       BOOLEAN NOT NULL DEFAULT FALSE,
    source_card_id INTEGER REFERENCES cards (id),
    paused_by      TEXT NOT NULL DEFAULT '',
    paused_at      TIMESTAMP,
    pause_reason   TEXT NOT NULL DEFAULT '',
    resume_state   TEXT NOT NULL DEFAULT '',
    pull_number    INTEGER NOT NULL DEFAULT 0,
    stopped_by     TEXT NOT NULL DEFAULT '',
    stopped_at     TIMESTAMP,
    stop_reason    TEXT NOT NULL DEFAULT '',
    continue_by    TEXT NOT NULL DEFAULT '',
    continue_at    TIMESTAMP
);
INSERT INTO tickets_old (id, title, state, repo, branch, created_at, updated_at, origin, rules, mandate, proposal, source_card_id, paused_by, paused_at, pause_reason, resume_state, pull_number, stopped_by, stopped_at, stop_reason, continue_by, continue_at)
SELECT id, title, CASE WHEN state = 'in_review' THEN 'working' ELSE state END, repo, branch, created_at, updated_at, origin, rules, mandate, proposal, source_card_id, paused_by, paused_at, pause_reason, CASE WHEN resume_state = 'in_review' THEN 'working' ELSE resume_state END, pull_number, stopped_by, stopped_at, stop_reason, continue_by, continue_at FROM tickets;
DROP TABLE tickets;
ALTER TABLE tickets_old RENAME TO tickets;
CREATE UNIQUE INDEX tickets_source_card ON tickets (source_card_id);
COMMIT;
PRAGMA foreign_keys = ON;
