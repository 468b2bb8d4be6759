-- +goose Up
-- The living status card of a Ticket asked for in Feishu: the message it was
-- posted as (a reply in the request's thread), and a digest of what it last
-- showed, so each change patches that one message and a retry after a crash
-- patches rather than posts again.
CREATE TABLE ticket_feishu_cards (
    ticket_id   BIGINT PRIMARY KEY REFERENCES tickets (id) ON DELETE CASCADE,
    chat_id     TEXT NOT NULL DEFAULT '',
    message_id  TEXT NOT NULL DEFAULT '',
    body_sha256 TEXT NOT NULL DEFAULT '',
    updated_at  TIMESTAMPTZ NOT NULL
);

-- When the service last received a message from each chat, for the panel's
-- list of chats.
ALTER TABLE feishu_chats ADD COLUMN last_message_at TIMESTAMPTZ;

-- +goose Down
ALTER TABLE feishu_chats DROP COLUMN last_message_at;
DROP TABLE ticket_feishu_cards;
