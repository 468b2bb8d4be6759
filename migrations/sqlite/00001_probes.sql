-- +goose Up
-- A probe is a diagnostic job: enqueued by `superagent doctor` and the
-- multi-process tests to prove that workers are alive and work each job once.
CREATE TABLE probes (
    id          INTEGER PRIMARY KEY,
    job_id      INTEGER NOT NULL,
    event       TEXT NOT NULL CHECK (event IN ('started', 'completed')),
    worker      TEXT NOT NULL,
    created_at  TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX probes_completed_once ON probes (job_id) WHERE event = 'completed';

-- +goose Down
DROP TABLE probes;
