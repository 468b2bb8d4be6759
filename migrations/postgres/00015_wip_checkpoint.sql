-- +goose Up
-- The repository where a Ticket's work-in-progress checkpoint ref
-- (refs/superagent/wip/<ticket>) may exist. It is set before the first
-- push of that ref and cleared once the ref is deleted at the Ticket's end,
-- so a sweep finds every ref a crash could have left behind.
ALTER TABLE executions ADD COLUMN wip_repo TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE executions DROP COLUMN wip_repo;
