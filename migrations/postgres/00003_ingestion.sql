-- +goose Up
-- Ingestion: every delivery is stored raw before it is acknowledged; its
-- processing turns it into at most one Trigger card in a Thread. Tickets and
-- subscriptions are minimal here; the routing issue grows them.
CREATE TABLE deliveries (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source       TEXT NOT NULL CHECK (source IN ('github', 'feishu')),
    dedupe_key   TEXT NOT NULL,
    event        TEXT NOT NULL,
    headers      TEXT NOT NULL DEFAULT '{}',
    body         BYTEA NOT NULL,
    received_at  TIMESTAMPTZ NOT NULL,
    state        TEXT NOT NULL CHECK (state IN ('received', 'processed', 'failed', 'ignored')),
    error        TEXT NOT NULL DEFAULT '',
    processed_at TIMESTAMPTZ,
    UNIQUE (source, dedupe_key)
);

CREATE TABLE github_installations (
    id            BIGINT PRIMARY KEY, -- GitHub's installation id
    account_login TEXT NOT NULL,
    account_id    BIGINT NOT NULL,
    account_type  TEXT NOT NULL,
    selection     TEXT NOT NULL DEFAULT '',
    state         TEXT NOT NULL CHECK (state IN ('active', 'suspended', 'deleted')),
    updated_at    TIMESTAMPTZ NOT NULL
);

CREATE TABLE github_repositories (
    id              BIGINT PRIMARY KEY, -- GitHub's repository id
    installation_id BIGINT NOT NULL,
    full_name       TEXT NOT NULL,
    private         BOOLEAN NOT NULL,
    active          BOOLEAN NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX github_repositories_installation ON github_repositories (installation_id);
CREATE INDEX github_repositories_full_name ON github_repositories (full_name);

-- Permission levels read from the GitHub API, kept for a while.
CREATE TABLE github_permissions (
    repo       TEXT NOT NULL,
    login      TEXT NOT NULL,
    permission TEXT NOT NULL,
    fetched_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (repo, login)
);

-- Feishu chats the bot is a member of (bot added/removed events).
CREATE TABLE feishu_chats (
    chat_id    TEXT PRIMARY KEY,
    name       TEXT NOT NULL DEFAULT '',
    external   BOOLEAN NOT NULL DEFAULT FALSE,
    active     BOOLEAN NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE threads (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source     TEXT NOT NULL CHECK (source IN ('github', 'feishu')),
    key        TEXT NOT NULL UNIQUE,
    repo       TEXT NOT NULL DEFAULT '',
    number     BIGINT NOT NULL DEFAULT 0,
    title      TEXT NOT NULL DEFAULT '',
    head_ref   TEXT NOT NULL DEFAULT '',
    bot_spoke  BOOLEAN NOT NULL DEFAULT FALSE,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX threads_repo_head_ref ON threads (repo, head_ref) WHERE head_ref <> '';

CREATE TABLE tickets (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    title      TEXT NOT NULL,
    state      TEXT NOT NULL CHECK (state IN ('open', 'working', 'waiting', 'paused', 'done', 'cancelled')),
    repo       TEXT NOT NULL DEFAULT '',
    branch     TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE subscriptions (
    ticket_id  BIGINT NOT NULL REFERENCES tickets (id) ON DELETE CASCADE,
    thread_id  BIGINT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (ticket_id, thread_id)
);
CREATE INDEX subscriptions_thread ON subscriptions (thread_id);

CREATE TABLE cards (
    id                BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery_id       BIGINT REFERENCES deliveries (id),
    source            TEXT NOT NULL CHECK (source IN ('github', 'feishu')),
    kind              TEXT NOT NULL,
    thread_id         BIGINT NOT NULL REFERENCES threads (id),
    author_id         TEXT NOT NULL DEFAULT '',
    author_login      TEXT NOT NULL DEFAULT '',
    author_name       TEXT NOT NULL DEFAULT '',
    author_type       TEXT NOT NULL CHECK (author_type IN ('user', 'bot')),
    author_permission TEXT NOT NULL DEFAULT '',
    addressed         BOOLEAN NOT NULL,
    addressed_why     TEXT NOT NULL DEFAULT '',
    refs              TEXT NOT NULL DEFAULT '[]',
    url               TEXT NOT NULL DEFAULT '',
    text              TEXT NOT NULL,
    text_truncated    BOOLEAN NOT NULL DEFAULT FALSE,
    full_text         TEXT,
    state             TEXT NOT NULL CHECK (state IN ('candidate', 'follow_up', 'routed', 'ignored')),
    ticket_id         BIGINT REFERENCES tickets (id),
    created_at        TIMESTAMPTZ NOT NULL,
    UNIQUE (delivery_id)
);
CREATE INDEX cards_thread ON cards (thread_id);
CREATE INDEX cards_state ON cards (state, id);

-- A follow-up notice tells the main Session that a card reached a Ticket.
CREATE TABLE follow_up_notices (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    card_id      BIGINT NOT NULL REFERENCES cards (id),
    ticket_id    BIGINT NOT NULL REFERENCES tickets (id),
    created_at   TIMESTAMPTZ NOT NULL,
    delivered_at TIMESTAMPTZ,
    UNIQUE (card_id, ticket_id)
);
CREATE INDEX follow_up_notices_pending ON follow_up_notices (id) WHERE delivered_at IS NULL;

-- +goose Down
DROP TABLE follow_up_notices;
DROP TABLE cards;
DROP TABLE subscriptions;
DROP TABLE tickets;
DROP TABLE threads;
DROP TABLE github_permissions;
DROP TABLE github_repositories;
DROP TABLE github_installations;
DROP TABLE feishu_chats;
DROP TABLE deliveries;
