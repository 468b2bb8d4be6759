-- +goose Up
-- What each role's model last answered and last failed with, so the
-- overview and the waiting cards can say that the model is failing, since
-- when and why. One row per role ('main', 'executor'); the error is
-- scrubbed of secrets before it is stored.
CREATE TABLE model_health (
    role            TEXT PRIMARY KEY,
    model           TEXT NOT NULL DEFAULT '',
    last_ok_at      TIMESTAMPTZ,
    last_failure_at TIMESTAMPTZ,
    failing_since   TIMESTAMPTZ,
    error           TEXT NOT NULL DEFAULT ''
);

-- A turn holds the main Session's lease from its start, and until
-- turn_due (the end of its wait for a burst to finish arriving) it has
-- not yet read what waits: what arrives meanwhile is its to read, and
-- needs no turn of its own. routed_at is when the last turn that was
-- given candidates ended: the next one waits out the debounce after it.
ALTER TABLE routing_state ADD COLUMN turn_due TIMESTAMPTZ;
ALTER TABLE routing_state ADD COLUMN routed_at TIMESTAMPTZ;

-- The roles' housekeeping jobs moved from the default queue to their own,
-- which only a process with a model fetches.
UPDATE river_job SET queue = 'upkeep'
    WHERE queue = 'default' AND kind IN ('route_watchdog', 'executor_watchdog', 'feishu_status_card')
    AND state IN ('available', 'scheduled', 'retryable', 'pending');

-- +goose Down
UPDATE river_job SET queue = 'default'
    WHERE queue = 'upkeep' AND state IN ('available', 'scheduled', 'retryable', 'pending');
ALTER TABLE routing_state DROP COLUMN routed_at;
ALTER TABLE routing_state DROP COLUMN turn_due;
DROP TABLE model_health;
