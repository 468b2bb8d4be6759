-- +goose Up
-- A Ticket stays with its work until its pull request is merged or closed:
-- the state in_review (its pull request is open), and the failure of its
-- latest Executor job (the job ran out of attempts), which a person's retry
-- clears.
ALTER TABLE tickets DROP CONSTRAINT tickets_state_check;
ALTER TABLE tickets ADD CONSTRAINT tickets_state_check
    CHECK (state IN ('open', 'working', 'waiting', 'paused', 'in_review', 'done', 'cancelled'));
ALTER TABLE tickets ADD COLUMN failed_at TIMESTAMPTZ;
ALTER TABLE tickets ADD COLUMN failure TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE tickets DROP COLUMN failure;
ALTER TABLE tickets DROP COLUMN failed_at;
UPDATE tickets SET state = 'working' WHERE state = 'in_review';
UPDATE tickets SET resume_state = 'working' WHERE resume_state = 'in_review';
ALTER TABLE tickets DROP CONSTRAINT tickets_state_check;
ALTER TABLE tickets ADD CONSTRAINT tickets_state_check
    CHECK (state IN ('open', 'working', 'waiting', 'paused', 'done', 'cancelled'));
