-- +goose Up
-- MCP servers per repository. repo_mcp holds the panel's configuration of
-- a repository's servers (the mcpServers JSON object teams write in
-- .superagent/mcp.json; its env values name repository secrets, never
-- hold them). repo_mcp_seen is what the last Ticket of a repository found
-- when it started each server: its tools, or why it has none. The panel
-- and doctor show it; listing tools otherwise means starting the servers.
CREATE TABLE repo_mcp (
    repo        TEXT PRIMARY KEY,
    config      TEXT NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL,
    updated_by  TEXT NOT NULL
);

CREATE TABLE repo_mcp_seen (
    repo       TEXT NOT NULL,
    server     TEXT NOT NULL,
    source     TEXT NOT NULL,
    tools      TEXT NOT NULL,
    problem    TEXT NOT NULL,
    ticket_id  BIGINT NOT NULL,
    seen_at    TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (repo, server)
);

-- +goose Down
DROP TABLE repo_mcp_seen;
DROP TABLE repo_mcp;
