-- +goose Up
-- Feishu as a place to work: what the main Session knows of each installed
-- repository (from the payloads that carry it), the display names of Feishu
-- senders read from the contact API, and the chats that opted in to
-- proactive admission of messages that do not address the bot.
ALTER TABLE github_repositories ADD COLUMN default_branch TEXT NOT NULL DEFAULT '';
ALTER TABLE github_repositories ADD COLUMN description TEXT NOT NULL DEFAULT '';

CREATE TABLE feishu_users (
    open_id    TEXT PRIMARY KEY,
    name       TEXT NOT NULL DEFAULT '',
    fetched_at TIMESTAMPTZ NOT NULL,
    error      TEXT NOT NULL DEFAULT ''
);

ALTER TABLE feishu_chats ADD COLUMN proactive BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE feishu_chats ADD COLUMN proactive_by TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE feishu_chats DROP COLUMN proactive_by;
ALTER TABLE feishu_chats DROP COLUMN proactive;
DROP TABLE feishu_users;
ALTER TABLE github_repositories DROP COLUMN description;
ALTER TABLE github_repositories DROP COLUMN default_branch;
