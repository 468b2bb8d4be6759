-- +goose Up
-- A Ticket's own budget, once a person gave one (a continue with a budget,
-- or the Executor granting the default again on a continue after the
-- budget was spent): the most its Executor Sessions may spend together.
-- A Ticket without a row has the deployment's default budget
-- (SUPERAGENT_TICKET_TOKEN_BUDGET, SUPERAGENT_TICKET_COST_BUDGET). A
-- raise a person asked for waits in raise_tokens / raise_cost until the
-- Executor starts the new Session, which adds it to what is spent then.
CREATE TABLE ticket_budgets (
    ticket_id    INTEGER PRIMARY KEY REFERENCES tickets (id) ON DELETE CASCADE,
    tokens       BIGINT NOT NULL DEFAULT 0,
    cost         REAL NOT NULL DEFAULT 0,
    raise_tokens BIGINT NOT NULL DEFAULT 0,
    raise_cost   REAL NOT NULL DEFAULT 0,
    set_by       TEXT NOT NULL DEFAULT '',
    updated_at   TIMESTAMP NOT NULL
);

-- +goose Down
DROP TABLE ticket_budgets;
