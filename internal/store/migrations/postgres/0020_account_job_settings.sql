-- An account's settings of background jobs (tools.AccountSettings): the
-- default delivery mode it chose for a builtin tool, and its own limits
-- of jobs (queued and running at once, running at once, how long a
-- finished job's result is kept; 0 is the server's). Times are Unix
-- milliseconds. A job's record whose result went with its retention
-- keeps the time it went in result_expired_at.
CREATE TABLE account_tool_settings (
    account_id            TEXT NOT NULL,
    tool_name             TEXT NOT NULL,
    default_delivery_mode TEXT NOT NULL,
    updated_at            BIGINT NOT NULL,
    PRIMARY KEY (account_id, tool_name)
);

CREATE TABLE account_job_limits (
    account_id          TEXT PRIMARY KEY,
    max_jobs            INTEGER NOT NULL DEFAULT 0,
    max_running         INTEGER NOT NULL DEFAULT 0,
    result_retention_ms BIGINT NOT NULL DEFAULT 0,
    updated_at          BIGINT NOT NULL
);

ALTER TABLE tool_executions ADD COLUMN result_expired_at BIGINT;
