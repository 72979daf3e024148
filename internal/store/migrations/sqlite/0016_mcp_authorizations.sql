-- Pending authorizations of remote MCP servers (authorization code with
-- PKCE) wait here for their callback, so that any process sharing the
-- store can finish one: state is the SHA-256 of the URL's state, flow the
-- verifier and client sealed under TOOLHOST_SECRET_KEY.
CREATE TABLE mcp_authorizations (
    state      BLOB PRIMARY KEY,
    account_id TEXT NOT NULL,
    server_id  TEXT NOT NULL,
    flow       BLOB NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX mcp_authorizations_server ON mcp_authorizations (account_id, server_id);
CREATE INDEX mcp_authorizations_expiry ON mcp_authorizations (expires_at);
