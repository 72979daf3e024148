-- What a /v1 request leaves for the replicas behind one load balancer.
--
-- v1_idempotency (internal/idempotency): one row per Idempotency-Key,
-- keyed by the SHA-256 of the scoped key (account, route, the client's
-- key) and grouped by the hash of the account, for the byte caps. A row is
-- a claim under a lease until done, then the response to replay. Times are
-- Unix milliseconds.
CREATE TABLE v1_idempotency (
    key_hash     TEXT PRIMARY KEY,
    account_hash TEXT NOT NULL,
    digest       TEXT NOT NULL,
    owner        TEXT NOT NULL,
    lease_until  BIGINT NOT NULL,
    done         BOOLEAN NOT NULL DEFAULT FALSE,
    status       INTEGER NOT NULL DEFAULT 0,
    header       TEXT NOT NULL DEFAULT '{}',
    body         BYTEA,
    size         BIGINT NOT NULL DEFAULT 0,
    stored_at    BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX v1_idempotency_account ON v1_idempotency (account_hash, stored_at) WHERE done;
CREATE INDEX v1_idempotency_stored ON v1_idempotency (stored_at) WHERE done;

-- v1_tool_rounds: the round records behind GET /v1/tool-rounds (one JSON
-- document per upstream call of a hosted loop), read by account and request.
CREATE TABLE v1_tool_rounds (
    account_id TEXT NOT NULL,
    request_id TEXT NOT NULL,
    round      INTEGER NOT NULL,
    run_id     TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    record     TEXT NOT NULL,
    PRIMARY KEY (account_id, request_id, run_id, round)
);
CREATE INDEX v1_tool_rounds_created ON v1_tool_rounds (created_at);
