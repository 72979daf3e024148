-- Sessions and caller slots (the tools API).
-- caller_slot now holds the slot a caller declares (narrator, director, …)
-- and the face a call came through (mcp, hosted, cli) moves to its own
-- column: existing rows keep their face there, and their slot is empty
-- because no caller could declare one before.
ALTER TABLE tool_executions ADD COLUMN face TEXT NOT NULL DEFAULT '';
UPDATE tool_executions SET face = caller_slot, caller_slot = '' WHERE caller_slot IN ('mcp', 'hosted', 'cli');

-- A session is owned by one account; ids are the caller's (MCP session ids,
-- X-Session-Id) so two accounts may use the same one.
CREATE TABLE sessions (
    account_id       TEXT NOT NULL,
    id               TEXT NOT NULL,
    metadata         TEXT NOT NULL DEFAULT '{}',
    tool_permissions TEXT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    PRIMARY KEY (account_id, id)
);

-- Tool definitions of the tools API. A null source_id is stored as '' so
-- that (name, source, source_id) is unique per account with or without one.
CREATE TABLE tool_definitions (
    id                TEXT PRIMARY KEY,
    account_id        TEXT NOT NULL,
    name              TEXT NOT NULL,
    description       TEXT NOT NULL DEFAULT '',
    parameters        TEXT NOT NULL,
    side_effect_level TEXT NOT NULL DEFAULT 'none',
    allowed_slots     TEXT NOT NULL DEFAULT '[]',
    source            TEXT NOT NULL DEFAULT 'custom',
    source_id         TEXT NOT NULL DEFAULT '',
    enabled           BOOLEAN NOT NULL,
    handler_type      TEXT NOT NULL DEFAULT '',
    handler           TEXT,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL,
    UNIQUE (account_id, name, source, source_id)
);
CREATE INDEX tool_definitions_account ON tool_definitions (account_id, updated_at);
