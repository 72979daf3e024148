-- The whole result of a call whose result reached its caller cut
-- (journal.FullResult): read in pages by read_result and the MCP resource
-- toolhost://executions/{id}/result. Kept as long as its record (journal
-- records are never deleted); no foreign key, because the record may reach
-- this table after its result (spooled). Bytes as BYTEA: a page read back
-- is exactly what the tool produced, NUL and all.
CREATE TABLE tool_results (
    execution_id     TEXT PRIMARY KEY,
    account_id       TEXT NOT NULL,
    text             BYTEA NOT NULL,
    text_bytes       BIGINT NOT NULL,
    structured       BYTEA,
    structured_bytes BIGINT NOT NULL,
    untrusted        BOOLEAN NOT NULL DEFAULT FALSE,
    created_at       BIGINT NOT NULL
);
