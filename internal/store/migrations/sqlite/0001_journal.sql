-- The execution journal: one row per call with its ordered state events,
-- and idempotency claims. Times are Unix milliseconds (the REST shape), JSON is kept as text,
-- the raw argument bytes as a blob (they may not even be UTF-8).
CREATE TABLE tool_executions (
    id                         TEXT PRIMARY KEY,
    account_id                 TEXT NOT NULL,
    key_id                     TEXT NOT NULL DEFAULT '',
    session_id                 TEXT NOT NULL DEFAULT '',
    floor_id                   TEXT NOT NULL DEFAULT '',
    run_id                     TEXT NOT NULL DEFAULT '',
    page_id                    TEXT,
    round                      INTEGER NOT NULL DEFAULT 0,
    call_id                    TEXT NOT NULL DEFAULT '',
    caller_slot                TEXT NOT NULL DEFAULT '',
    provider_id                TEXT NOT NULL DEFAULT '',
    provider_type              TEXT NOT NULL DEFAULT '',
    tool_name                  TEXT NOT NULL,
    tool_version               TEXT NOT NULL DEFAULT '',
    side_effect_level          TEXT NOT NULL DEFAULT '',
    args_raw                   BLOB,
    args                       TEXT,
    args_digest                TEXT NOT NULL DEFAULT '',
    idempotency_key            TEXT NOT NULL DEFAULT '',
    trace_id                   TEXT NOT NULL DEFAULT '',
    status                     TEXT NOT NULL,
    lifecycle_state            TEXT NOT NULL,
    commit_outcome             TEXT NOT NULL,
    state                      TEXT NOT NULL,
    result                     TEXT,
    result_text                TEXT NOT NULL DEFAULT '',
    error_code                 TEXT NOT NULL DEFAULT '',
    error_message              TEXT,
    summary                    TEXT NOT NULL DEFAULT '',
    units                      REAL NOT NULL DEFAULT 0,
    truncated                  INTEGER NOT NULL DEFAULT 0,
    duration_ms                INTEGER NOT NULL DEFAULT 0,
    started_at                 INTEGER NOT NULL,
    finished_at                INTEGER,
    delivery_mode              TEXT NOT NULL DEFAULT 'inline',
    attempt_no                 INTEGER NOT NULL DEFAULT 1,
    runtime_job_id             TEXT,
    replay_parent_execution_id TEXT,
    instance_id                TEXT NOT NULL DEFAULT '',
    -- The state events, one JSON object per line, appended as the call
    -- moves: a call costs one insert and one update, not a row per event.
    events                     TEXT NOT NULL DEFAULT '',
    created_at                 INTEGER NOT NULL
);
CREATE INDEX tool_executions_session ON tool_executions (account_id, session_id, started_at);
CREATE INDEX tool_executions_floor ON tool_executions (account_id, floor_id, created_at);
CREATE INDEX tool_executions_run ON tool_executions (account_id, run_id, started_at);
CREATE INDEX tool_executions_opened ON tool_executions (lifecycle_state) WHERE lifecycle_state = 'opened';

CREATE TABLE idempotency_keys (
    account_id   TEXT NOT NULL,
    key          TEXT NOT NULL,
    tool_name    TEXT NOT NULL,
    tool_version TEXT NOT NULL,
    digest       TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    PRIMARY KEY (account_id, key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
