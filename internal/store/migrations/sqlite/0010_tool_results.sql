-- The whole result of a call whose result reached its caller cut
-- (journal.FullResult): read in pages by read_result and the MCP resource
-- toolhost://executions/{id}/result. Kept as long as its record (journal
-- records are never deleted); no foreign key, because the record may reach
-- this table after its result (spooled). Bytes as blobs: a page read back
-- is exactly what the tool produced, NUL and all.
CREATE TABLE tool_results (
    execution_id     TEXT PRIMARY KEY,
    account_id       TEXT NOT NULL,
    text             BLOB NOT NULL,
    text_bytes       INTEGER NOT NULL,
    structured       BLOB,
    structured_bytes INTEGER NOT NULL,
    untrusted        INTEGER NOT NULL DEFAULT 0,
    created_at       INTEGER NOT NULL
);
