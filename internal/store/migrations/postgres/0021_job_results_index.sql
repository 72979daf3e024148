-- toolhost:no-transaction
-- The result retention of jobs (0020) finds an account's finished jobs
-- whose result is still kept, oldest first. Built CONCURRENTLY, outside a
-- transaction, so writers of a large journal are not held for the build.
CREATE INDEX CONCURRENTLY IF NOT EXISTS tool_executions_job_results ON tool_executions (account_id, finished_at)
    WHERE delivery_mode = 'async_job' AND result_expired_at IS NULL;
