-- +goose Up
-- Each installation's write budgets (a minute's and an hour's), shared by
-- every process on the database: tat_us is the budget's theoretical
-- arrival time in microseconds since the Unix epoch (the generic cell
-- rate algorithm), moved forward by one interval per write.
CREATE TABLE github_write_pacing (
    installation_id BIGINT NOT NULL,
    budget TEXT NOT NULL,
    tat_us BIGINT NOT NULL,
    PRIMARY KEY (installation_id, budget)
);

-- +goose Down
DROP TABLE github_write_pacing;
