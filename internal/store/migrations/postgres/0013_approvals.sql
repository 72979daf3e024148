-- Approvals (tools/approval): the confirmation records of calls whose
-- approval policy asks, each bound to one invocation digest. Times are Unix
-- milliseconds; decided_at and consumed_at are 0 until set. An approval is
-- consumed at most once (one UPDATE that requires status 'approved').
CREATE TABLE approvals (
    id                TEXT PRIMARY KEY,
    account_id        TEXT NOT NULL,
    session_id        TEXT NOT NULL,
    face              TEXT NOT NULL,
    tool_name         TEXT NOT NULL,
    tool_version      TEXT NOT NULL,
    side_effect_level TEXT NOT NULL,
    digest            TEXT NOT NULL,
    arguments         TEXT NOT NULL,
    execution_id      TEXT NOT NULL,
    status            TEXT NOT NULL,
    requested_at      BIGINT NOT NULL,
    expires_at        BIGINT NOT NULL,
    decided_by        TEXT NOT NULL DEFAULT '',
    decided_at        BIGINT NOT NULL DEFAULT 0,
    decided_via       TEXT NOT NULL DEFAULT '',
    reason            TEXT NOT NULL DEFAULT '',
    consumed_by       TEXT NOT NULL DEFAULT '',
    consumed_at       BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX approvals_list ON approvals (account_id, requested_at DESC, id DESC);
CREATE INDEX approvals_consume ON approvals (account_id, digest) WHERE status = 'approved';
