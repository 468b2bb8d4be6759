-- +goose Up
-- Real repositories: the team's default setup script (used when a
-- repository has no .superagent/setup.sh), per-repository secrets for the
-- sandboxed commands, and each Ticket's last setup outcome, which the
-- Executor Session and the Ticket page read.

-- One row at most (id 1).
CREATE TABLE setup_default (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    script      TEXT NOT NULL,
    updated_at  TIMESTAMP NOT NULL,
    updated_by  TEXT NOT NULL
);

-- A secret's value is sealed (AES-256-GCM under SUPERAGENT_SECRETS_KEY,
-- base64 of nonce and ciphertext); it is never read back by the panel or
-- the API.
CREATE TABLE repo_secrets (
    repo        TEXT NOT NULL,
    name        TEXT NOT NULL,
    sealed      TEXT NOT NULL,
    updated_at  TIMESTAMP NOT NULL,
    updated_by  TEXT NOT NULL,
    PRIMARY KEY (repo, name)
);

CREATE TABLE ticket_setups (
    ticket_id      INTEGER PRIMARY KEY REFERENCES tickets (id) ON DELETE CASCADE,
    source         TEXT NOT NULL,
    script_sha256  TEXT NOT NULL,
    cached         BOOLEAN NOT NULL,
    ok             BOOLEAN NOT NULL,
    exit_code      INTEGER NOT NULL,
    timed_out      BOOLEAN NOT NULL,
    over_quota     BOOLEAN NOT NULL,
    output_tail    TEXT NOT NULL,
    duration_ms    INTEGER NOT NULL,
    ran_at         TIMESTAMP NOT NULL
);

-- +goose Down
DROP TABLE ticket_setups;
DROP TABLE repo_secrets;
DROP TABLE setup_default;
