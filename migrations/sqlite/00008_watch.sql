-- +goose Up
-- Watch and steer: a person's stop and continue on a Ticket, the reason a
-- routing decision on a card was refused (the panel's cards inbox), and the
-- Ticket's progress on GitHub: its one progress comment, edited in place,
-- and the superagent check run on its pull request's head.
ALTER TABLE tickets ADD COLUMN stopped_by TEXT NOT NULL DEFAULT '';
ALTER TABLE tickets ADD COLUMN stopped_at TIMESTAMP;
ALTER TABLE tickets ADD COLUMN stop_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE tickets ADD COLUMN continue_by TEXT NOT NULL DEFAULT '';
ALTER TABLE tickets ADD COLUMN continue_at TIMESTAMP;

ALTER TABLE cards ADD COLUMN route_refusal TEXT NOT NULL DEFAULT '';

CREATE TABLE ticket_progress (
    ticket_id      INTEGER PRIMARY KEY REFERENCES tickets (id) ON DELETE CASCADE,
    comment_target TEXT NOT NULL DEFAULT '',
    comment_id     INTEGER NOT NULL DEFAULT 0,
    body_sha256    TEXT NOT NULL DEFAULT '',
    check_head_sha TEXT NOT NULL DEFAULT '',
    check_run_id   INTEGER NOT NULL DEFAULT 0,
    check_done     BOOLEAN NOT NULL DEFAULT FALSE,
    updated_at     TIMESTAMP NOT NULL
);

-- +goose Down
DROP TABLE ticket_progress;
ALTER TABLE cards DROP COLUMN route_refusal;
ALTER TABLE tickets DROP COLUMN continue_at;
ALTER TABLE tickets DROP COLUMN continue_by;
ALTER TABLE tickets DROP COLUMN stop_reason;
ALTER TABLE tickets DROP COLUMN stopped_at;
ALTER TABLE tickets DROP COLUMN stopped_by;
