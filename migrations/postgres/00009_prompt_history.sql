-- +goose Up
-- True prompt history. A revision's content depends on the built-in texts
-- of every part it did not override, which a later release may change; so
-- does the system prompt of every model request. Both now name the set of
-- built-in texts they were made with: by key, the SHA-256 of the text in
-- prompt_default_texts (JSON null: not recorded). A set the binary records
-- is named by the SHA-256 of its parts, so every revision and prompt of one
-- release shares one row.
CREATE TABLE prompt_builtin_sets (
    id          TEXT PRIMARY KEY,
    parts       TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);

-- builtin_set NULL: the built-in texts were not recorded. binary_version is
-- the superagent version that saved the revision ('' before this).
ALTER TABLE prompt_versions ADD COLUMN builtin_set TEXT REFERENCES prompt_builtin_sets (id);
ALTER TABLE prompt_versions ADD COLUMN binary_version TEXT NOT NULL DEFAULT '';

-- Revisions saved before this migration recorded neither. What can be known
-- is filled in: every release stores its texts (with the time) before its
-- first save, so a key for which exactly one text had been stored by the
-- time of a save had that text at the save. A key with several candidates
-- (a release changed it before the save, or two releases ran side by side)
-- is recorded as null: not recorded. Such sets are named backfill-<revision>.
INSERT INTO prompt_builtin_sets (id, parts, created_at)
SELECT 'backfill-' || v.revision,
       (SELECT COALESCE(json_object_agg(c.key, c.sha256)::text, '{}') FROM (
            SELECT t.key AS key, CASE WHEN COUNT(*) = 1 THEN MIN(t.sha256) END AS sha256
            FROM prompt_default_texts t WHERE t.created_at <= v.created_at GROUP BY t.key) c),
       v.created_at
FROM prompt_versions v
WHERE EXISTS (SELECT 1 FROM prompt_default_texts t WHERE t.created_at <= v.created_at);
UPDATE prompt_versions SET builtin_set = 'backfill-' || revision
WHERE EXISTS (SELECT 1 FROM prompt_builtin_sets s WHERE s.id = 'backfill-' || prompt_versions.revision);

-- Every distinct system prompt the binary assembled, named by its SHA-256:
-- the revision, the built-in texts and the caller's input (environment
-- lines, AGENTS.md files, inferred rules) it was built from, so that the
-- prompt of any recorded model request can be rebuilt exactly.
CREATE TABLE prompt_assemblies (
    sha256       TEXT PRIMARY KEY,
    revision     BIGINT NOT NULL,
    role         TEXT NOT NULL,
    builtin_set  TEXT NOT NULL REFERENCES prompt_builtin_sets (id),
    input        TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL
);

-- A model request names the prompt as assembled (before secrets were
-- scrubbed from it; usually the same as prompt_sha256) and the tools it
-- offered, stored once per distinct set.
ALTER TABLE session_requests ADD COLUMN assembled_sha256 TEXT NOT NULL DEFAULT '';
ALTER TABLE session_requests ADD COLUMN tools_sha256 TEXT NOT NULL DEFAULT '';
CREATE TABLE session_tool_sets (
    sha256      TEXT PRIMARY KEY,
    tools       TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE session_tool_sets;
ALTER TABLE session_requests DROP COLUMN tools_sha256;
ALTER TABLE session_requests DROP COLUMN assembled_sha256;
DROP TABLE prompt_assemblies;
ALTER TABLE prompt_versions DROP COLUMN binary_version;
ALTER TABLE prompt_versions DROP COLUMN builtin_set;
DROP TABLE prompt_builtin_sets;
