-- +goose Up
-- Screenshots the Executor's screenshot tool took, kept by the service and
-- served at /shots/<token>.png: token is 128 random bits in hex, the only
-- thing that names a shot outside. feishu_image_key is the key Feishu gave
-- the image when a status card first showed it.
CREATE TABLE screenshots (
    token            TEXT PRIMARY KEY,
    ticket_id        INTEGER NOT NULL REFERENCES tickets(id) ON DELETE CASCADE,
    label            TEXT NOT NULL DEFAULT '',
    url              TEXT NOT NULL DEFAULT '',
    width            INTEGER NOT NULL,
    height           INTEGER NOT NULL,
    png              BLOB NOT NULL,
    feishu_image_key TEXT NOT NULL DEFAULT '',
    created_at       TIMESTAMP NOT NULL
);
CREATE INDEX screenshots_ticket ON screenshots (ticket_id, created_at);

-- +goose Down
DROP TABLE screenshots;
