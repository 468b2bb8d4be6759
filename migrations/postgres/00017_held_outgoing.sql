-- +goose Up
-- A message recorded but held back from sending: a person's stop is
-- acknowledged only once the stopped Ticket's Executor has made its last
-- writes (or had them refused), so nothing is written on the Ticket's
-- behalf after the acknowledgement. The Executor's job releases it.
ALTER TABLE outgoing_messages ADD COLUMN held BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE outgoing_messages DROP COLUMN held;
