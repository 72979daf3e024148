-- toolhost:no-transaction
-- The journal's retention (journal.retention, journal.max_rows, toolhost
-- journal prune) deletes the oldest records in small batches: by creation
-- time, with the idempotency keys that name them. Built CONCURRENTLY,
-- outside a transaction, so writers of a large journal are not held for
-- the build.
CREATE INDEX CONCURRENTLY IF NOT EXISTS tool_executions_created ON tool_executions (created_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS idempotency_keys_execution ON idempotency_keys (execution_id);
