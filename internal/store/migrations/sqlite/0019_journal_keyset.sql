-- Keyset pages of the journal (the console's executions pages, cursor
-- on GET /tool-executions) walk an account's records in started_at or
-- created_at order from a position, id breaking ties (the console's jobs
-- page: an account's deferred calls in created_at order): these indexes make
-- a page cost its own rows, however deep.
CREATE INDEX tool_executions_account_started ON tool_executions (account_id, started_at, id);
CREATE INDEX tool_executions_account_created ON tool_executions (account_id, created_at, id);
CREATE INDEX tool_executions_account_jobs ON tool_executions (account_id, delivery_mode, created_at, id);
