-- +goose Up
-- Executors: each Ticket's pull request, the cards and notes its Executor
-- has been given, the lease that keeps one Executor running per Ticket (with
-- its Session and the directories it worked in, for the AGENTS.md chain), and
-- the counters behind the host's limits (review rounds per automated
-- reviewer, the commits of a pull request that failed a check).
ALTER TABLE tickets ADD COLUMN pull_number BIGINT NOT NULL DEFAULT 0;

-- A Thread followed for context only: its cards reach the Executor, but it
-- may not write there.
ALTER TABLE subscriptions ADD COLUMN context_only BOOLEAN NOT NULL DEFAULT FALSE;

-- What a sent write produced (a comment's URL, a pull request's number), so
-- a retried tool call answers the same without writing again.
ALTER TABLE outgoing_messages ADD COLUMN result TEXT NOT NULL DEFAULT '';

-- A row per card a Ticket's Executor was given ('delivered') or that the
-- host kept from it on purpose ('withheld', with the reason). Either way the
-- Ticket took the card: it does not go back to the main Session when the
-- Ticket ends.
CREATE TABLE ticket_deliveries (
    ticket_id  BIGINT NOT NULL REFERENCES tickets (id) ON DELETE CASCADE,
    card_id    BIGINT NOT NULL REFERENCES cards (id),
    session_id BIGINT,
    state      TEXT NOT NULL CHECK (state IN ('delivered', 'withheld')),
    reason     TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (ticket_id, card_id)
);

CREATE TABLE executions (
    ticket_id    BIGINT PRIMARY KEY REFERENCES tickets (id) ON DELETE CASCADE,
    session_id   BIGINT,
    holder       TEXT NOT NULL DEFAULT '',
    lease_until  TIMESTAMPTZ,
    work_dirs    TEXT NOT NULL DEFAULT '[]',
    confirmed_at TIMESTAMPTZ,
    created_at   TIMESTAMPTZ NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL
);

CREATE TABLE executor_counters (
    ticket_id BIGINT NOT NULL REFERENCES tickets (id) ON DELETE CASCADE,
    name      TEXT NOT NULL,
    count     BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (ticket_id, name)
);

-- +goose Down
DROP TABLE executor_counters;
DROP TABLE executions;
DROP TABLE ticket_deliveries;
ALTER TABLE outgoing_messages DROP COLUMN result;
ALTER TABLE subscriptions DROP COLUMN context_only;
ALTER TABLE tickets DROP COLUMN pull_number;
