-- Remote MCP servers an account registers (mcpremote). config holds the
-- non-secret settings as JSON (header names, auth type and client, timeout,
-- per-tool overrides); secrets holds only the AES-GCM sealed secrets. The
-- last tools/list of each server is its snapshot.
CREATE TABLE mcp_servers (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL,
    name        TEXT NOT NULL,
    url         TEXT NOT NULL,
    config      TEXT NOT NULL,
    secrets     BLOB,
    enabled     INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    snapshot    TEXT,
    snapshot_at INTEGER,
    UNIQUE (account_id, name)
);
