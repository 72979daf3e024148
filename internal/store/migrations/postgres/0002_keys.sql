-- Accounts, API keys (hash only) and usage metering for the keys package.
-- Times are Unix milliseconds (UTC), as in the journal tables.
CREATE TABLE accounts (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE api_keys (
    id                TEXT PRIMARY KEY,
    account_id        TEXT NOT NULL REFERENCES accounts(id),
    name              TEXT NOT NULL,
    prefix            TEXT NOT NULL,
    hash              TEXT NOT NULL UNIQUE,
    scopes            TEXT NOT NULL,              -- space-separated, sorted
    calls_per_minute  INTEGER NOT NULL DEFAULT 0,
    concurrent_calls  INTEGER NOT NULL DEFAULT 0,
    monthly_units_cap DOUBLE PRECISION NOT NULL DEFAULT 0,
    created_at        BIGINT NOT NULL,
    last_used_at      BIGINT,
    revoked_at        BIGINT
);
CREATE INDEX api_keys_account ON api_keys(account_id);

-- Running month total per key, reservations included: the cap check.
CREATE TABLE key_month_cost (
    key_id TEXT NOT NULL,
    month  TEXT NOT NULL,
    cost   DOUBLE PRECISION NOT NULL DEFAULT 0,
    PRIMARY KEY (key_id, month)
);

-- Settled usage per key, month and tool: the report.
CREATE TABLE key_usage (
    account_id TEXT NOT NULL,
    key_id     TEXT NOT NULL,
    month      TEXT NOT NULL,
    tool       TEXT NOT NULL,
    calls      BIGINT NOT NULL DEFAULT 0,
    units      DOUBLE PRECISION NOT NULL DEFAULT 0,
    cost       DOUBLE PRECISION NOT NULL DEFAULT 0,
    PRIMARY KEY (key_id, month, tool)
);
CREATE INDEX key_usage_account_month ON key_usage(account_id, month);
