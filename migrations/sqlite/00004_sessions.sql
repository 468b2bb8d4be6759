-- +goose Up
-- A session is one stored model conversation (the main Session or an
-- Executor Session). ticket_id is a plain integer: tickets belong to another
-- package. last_seq allocates message sequence numbers under the row lock,
-- so sequence order is commit order.
CREATE TABLE sessions (
    id                  INTEGER PRIMARY KEY,
    role                TEXT NOT NULL CHECK (role IN ('main', 'executor')),
    ticket_id           INTEGER,
    state               TEXT NOT NULL CHECK (state IN ('active', 'done', 'stopped', 'rolled_over', 'failed')),
    state_reason        TEXT NOT NULL DEFAULT '',
    predecessor_id      INTEGER REFERENCES sessions (id),
    last_seq            INTEGER NOT NULL DEFAULT 0,
    wrap_up_seq         INTEGER NOT NULL DEFAULT 0,
    wrap_up_reason      TEXT NOT NULL DEFAULT '',
    requests            INTEGER NOT NULL DEFAULT 0,
    input_tokens        INTEGER NOT NULL DEFAULT 0,
    output_tokens       INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens   INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens  INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens    INTEGER NOT NULL DEFAULT 0,
    cost                REAL NOT NULL DEFAULT 0,
    created_at          TIMESTAMP NOT NULL,
    updated_at          TIMESTAMP NOT NULL
);
CREATE INDEX sessions_ticket ON sessions (ticket_id);
CREATE UNIQUE INDEX sessions_successor ON sessions (predecessor_id);

-- One model request: the prompt revision and hash it used and what it cost.
CREATE TABLE session_requests (
    id                  INTEGER PRIMARY KEY,
    session_id          INTEGER NOT NULL REFERENCES sessions (id),
    prompt_revision     INTEGER NOT NULL,
    prompt_sha256       TEXT NOT NULL,
    model               TEXT NOT NULL,
    response_model      TEXT NOT NULL,
    purpose             TEXT NOT NULL CHECK (purpose IN ('step', 'wrap_up', 'handoff')),
    finish_reason       TEXT NOT NULL,
    input_tokens        INTEGER NOT NULL,
    output_tokens       INTEGER NOT NULL,
    cache_read_tokens   INTEGER NOT NULL,
    cache_write_tokens  INTEGER NOT NULL,
    reasoning_tokens    INTEGER NOT NULL,
    cost                REAL NOT NULL,
    latency_ms          INTEGER NOT NULL,
    created_at          TIMESTAMP NOT NULL
);
CREATE INDEX session_requests_session ON session_requests (session_id, id);

-- The transcript, system prompt excluded (each request row names its revision).
CREATE TABLE session_messages (
    id            INTEGER PRIMARY KEY,
    session_id    INTEGER NOT NULL REFERENCES sessions (id),
    seq           INTEGER NOT NULL,
    role          TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
    content       TEXT NOT NULL,
    reasoning     TEXT NOT NULL DEFAULT '',
    tool_calls    TEXT NOT NULL DEFAULT '',
    tool_call_id  TEXT NOT NULL DEFAULT '',
    request_id    INTEGER REFERENCES session_requests (id),
    created_at    TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX session_messages_seq ON session_messages (session_id, seq);

-- A tool call's intent is stored before it runs, its end after: a call left
-- 'started' was interrupted.
CREATE TABLE session_tool_calls (
    id           INTEGER PRIMARY KEY,
    session_id   INTEGER NOT NULL REFERENCES sessions (id),
    call_id      TEXT NOT NULL,
    name         TEXT NOT NULL,
    arguments    TEXT NOT NULL,
    state        TEXT NOT NULL CHECK (state IN ('started', 'done', 'failed', 'refused', 'interrupted')),
    attempts     INTEGER NOT NULL DEFAULT 1,
    started_at   TIMESTAMP NOT NULL,
    finished_at  TIMESTAMP
);
CREATE UNIQUE INDEX session_tool_calls_call ON session_tool_calls (session_id, call_id);

-- +goose Down
DROP TABLE session_tool_calls;
DROP TABLE session_messages;
DROP TABLE session_requests;
DROP TABLE sessions;
