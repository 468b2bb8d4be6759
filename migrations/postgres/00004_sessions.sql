-- +goose Up
-- A session is one stored model conversation (the main Session or an
-- Executor Session). ticket_id is a plain integer: tickets belong to another
-- package. last_seq allocates message sequence numbers under the row lock,
-- so sequence order is commit order.
CREATE TABLE sessions (
    id                  BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    role                TEXT NOT NULL CHECK (role IN ('main', 'executor')),
    ticket_id           BIGINT,
    state               TEXT NOT NULL CHECK (state IN ('active', 'done', 'stopped', 'rolled_over', 'failed')),
    state_reason        TEXT NOT NULL DEFAULT '',
    predecessor_id      BIGINT REFERENCES sessions (id),
    last_seq            BIGINT NOT NULL DEFAULT 0,
    wrap_up_seq         BIGINT NOT NULL DEFAULT 0,
    wrap_up_reason      TEXT NOT NULL DEFAULT '',
    requests            BIGINT NOT NULL DEFAULT 0,
    input_tokens        BIGINT NOT NULL DEFAULT 0,
    output_tokens       BIGINT NOT NULL DEFAULT 0,
    cache_read_tokens   BIGINT NOT NULL DEFAULT 0,
    cache_write_tokens  BIGINT NOT NULL DEFAULT 0,
    reasoning_tokens    BIGINT NOT NULL DEFAULT 0,
    cost                DOUBLE PRECISION NOT NULL DEFAULT 0,
    created_at          TIMESTAMPTZ NOT NULL,
    updated_at          TIMESTAMPTZ NOT NULL
);
CREATE INDEX sessions_ticket ON sessions (ticket_id);
CREATE UNIQUE INDEX sessions_successor ON sessions (predecessor_id);

-- One model request: the prompt revision and hash it used and what it cost.
CREATE TABLE session_requests (
    id                  BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id          BIGINT NOT NULL REFERENCES sessions (id),
    prompt_revision     BIGINT NOT NULL,
    prompt_sha256       TEXT NOT NULL,
    model               TEXT NOT NULL,
    response_model      TEXT NOT NULL,
    purpose             TEXT NOT NULL CHECK (purpose IN ('step', 'wrap_up', 'handoff')),
    finish_reason       TEXT NOT NULL,
    input_tokens        BIGINT NOT NULL,
    output_tokens       BIGINT NOT NULL,
    cache_read_tokens   BIGINT NOT NULL,
    cache_write_tokens  BIGINT NOT NULL,
    reasoning_tokens    BIGINT NOT NULL,
    cost                DOUBLE PRECISION NOT NULL,
    latency_ms          BIGINT NOT NULL,
    created_at          TIMESTAMPTZ NOT NULL
);
CREATE INDEX session_requests_session ON session_requests (session_id, id);

-- The transcript, system prompt excluded (each request row names its revision).
CREATE TABLE session_messages (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id    BIGINT NOT NULL REFERENCES sessions (id),
    seq           BIGINT NOT NULL,
    role          TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
    content       TEXT NOT NULL,
    reasoning     TEXT NOT NULL DEFAULT '',
    tool_calls    TEXT NOT NULL DEFAULT '',
    tool_call_id  TEXT NOT NULL DEFAULT '',
    request_id    BIGINT REFERENCES session_requests (id),
    created_at    TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX session_messages_seq ON session_messages (session_id, seq);

-- A tool call's intent is stored before it runs, its end after: a call left
-- 'started' was interrupted.
CREATE TABLE session_tool_calls (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id   BIGINT NOT NULL REFERENCES sessions (id),
    call_id      TEXT NOT NULL,
    name         TEXT NOT NULL,
    arguments    TEXT NOT NULL,
    state        TEXT NOT NULL CHECK (state IN ('started', 'done', 'failed', 'refused', 'interrupted')),
    attempts     BIGINT NOT NULL DEFAULT 1,
    started_at   TIMESTAMPTZ NOT NULL,
    finished_at  TIMESTAMPTZ
);
CREATE UNIQUE INDEX session_tool_calls_call ON session_tool_calls (session_id, call_id);

-- +goose Down
DROP TABLE session_tool_calls;
DROP TABLE session_messages;
DROP TABLE session_requests;
DROP TABLE sessions;
