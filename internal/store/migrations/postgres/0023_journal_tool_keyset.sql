-- toolhost:no-transaction
-- A journal page filtered to one tool (the console's overview links each
-- tool to its executions, GET /tool-executions?tool_name=) walks that
-- tool's records in started_at order: without this index a rare tool's
-- page read the whole account (207 ms over 1,000,000 records, 9 in 10 in
-- the account, the tool in 1 of 100,000). Built CONCURRENTLY, outside a
-- transaction, so writers of a large journal are not held for the build.
CREATE INDEX CONCURRENTLY IF NOT EXISTS tool_executions_account_tool_started ON tool_executions (account_id, tool_name, started_at, id);
