-- +goose Up
-- Routing: Tickets grow their origin, Mandate, proposal flag and pause; the
-- main Session's Reports, hand-backs, notes, every outgoing message intent,
-- and the lease that keeps one turn of the main Session running at a time.
-- A proposal (propose mode) is a Ticket in state 'waiting' with proposal set:
-- SQLite cannot change the state CHECK without rebuilding the referenced table.
ALTER TABLE tickets ADD COLUMN origin TEXT NOT NULL DEFAULT 'explicit' CHECK (origin IN ('explicit', 'inferred'));
ALTER TABLE tickets ADD COLUMN rules TEXT NOT NULL DEFAULT '[]';
ALTER TABLE tickets ADD COLUMN mandate TEXT NOT NULL DEFAULT '{}';
ALTER TABLE tickets ADD COLUMN proposal BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE tickets ADD COLUMN source_card_id INTEGER REFERENCES cards (id);
ALTER TABLE tickets ADD COLUMN paused_by TEXT NOT NULL DEFAULT '';
ALTER TABLE tickets ADD COLUMN paused_at TIMESTAMP;
ALTER TABLE tickets ADD COLUMN pause_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE tickets ADD COLUMN resume_state TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX tickets_source_card ON tickets (source_card_id);

-- offered_at: the card was appended to the main Session (once, even if the
-- turn dies afterwards).
ALTER TABLE cards ADD COLUMN offered_at TIMESTAMP;
ALTER TABLE cards ADD COLUMN routing_note TEXT NOT NULL DEFAULT '';

CREATE TABLE ticket_reports (
    id           INTEGER PRIMARY KEY,
    ticket_id    INTEGER NOT NULL REFERENCES tickets (id) ON DELETE CASCADE,
    session_id   INTEGER,
    state        TEXT NOT NULL CHECK (state IN ('progress', 'done', 'blocked', 'waiting')),
    summary      TEXT NOT NULL,
    human_action TEXT NOT NULL DEFAULT '',
    message      TEXT NOT NULL DEFAULT '',
    created_at   TIMESTAMP NOT NULL,
    delivered_at TIMESTAMP
);
CREATE INDEX ticket_reports_ticket ON ticket_reports (ticket_id, id);

CREATE TABLE hand_backs (
    id         INTEGER PRIMARY KEY,
    card_id    INTEGER NOT NULL REFERENCES cards (id),
    ticket_id  INTEGER NOT NULL REFERENCES tickets (id) ON DELETE CASCADE,
    reason     TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    UNIQUE (card_id, ticket_id)
);

CREATE TABLE ticket_notes (
    id           INTEGER PRIMARY KEY,
    ticket_id    INTEGER NOT NULL REFERENCES tickets (id) ON DELETE CASCADE,
    text         TEXT NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    delivered_at TIMESTAMP
);

-- Every message the service sends, recorded as an intent before it is sent:
-- a retry finds the intent by key and never sends it twice.
CREATE TABLE outgoing_messages (
    id         INTEGER PRIMARY KEY,
    intent_key TEXT NOT NULL UNIQUE,
    ticket_id  INTEGER REFERENCES tickets (id) ON DELETE CASCADE,
    card_id    INTEGER REFERENCES cards (id),
    source     TEXT NOT NULL CHECK (source IN ('github', 'feishu')),
    kind       TEXT NOT NULL,
    target     TEXT NOT NULL DEFAULT '',
    body       TEXT NOT NULL DEFAULT '',
    state      TEXT NOT NULL CHECK (state IN ('pending', 'sending', 'sent', 'failed')),
    error      TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMP NOT NULL,
    claimed_at TIMESTAMP,
    sent_at    TIMESTAMP
);
CREATE INDEX outgoing_messages_ticket ON outgoing_messages (ticket_id, id);
CREATE INDEX outgoing_messages_pending ON outgoing_messages (id) WHERE state = 'pending';

-- The main Session of the deployment and the lease of its running turn.
CREATE TABLE routing_state (
    name            TEXT PRIMARY KEY,
    main_session_id INTEGER,
    holder          TEXT NOT NULL DEFAULT '',
    lease_until     TIMESTAMP
);

-- +goose Down
DROP TABLE routing_state;
DROP TABLE outgoing_messages;
DROP TABLE ticket_notes;
DROP TABLE hand_backs;
DROP TABLE ticket_reports;
ALTER TABLE cards DROP COLUMN routing_note;
ALTER TABLE cards DROP COLUMN offered_at;
DROP INDEX tickets_source_card;
ALTER TABLE tickets DROP COLUMN resume_state;
ALTER TABLE tickets DROP COLUMN pause_reason;
ALTER TABLE tickets DROP COLUMN paused_at;
ALTER TABLE tickets DROP COLUMN paused_by;
ALTER TABLE tickets DROP COLUMN source_card_id;
ALTER TABLE tickets DROP COLUMN proposal;
ALTER TABLE tickets DROP COLUMN mandate;
ALTER TABLE tickets DROP COLUMN rules;
ALTER TABLE tickets DROP COLUMN origin;
