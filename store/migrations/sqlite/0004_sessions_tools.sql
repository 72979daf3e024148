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
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    PRIMARY KEY (account_id, id)
);
