-- The journal's retention (journal.retention, journal.max_rows, toolhost
-- journal prune) deletes the oldest records in small batches: by creation
-- time, with the idempotency keys that name them.
CREATE INDEX tool_executions_created ON tool_executions (created_at);
CREATE INDEX idempotency_keys_execution ON idempotency_keys (execution_id);
