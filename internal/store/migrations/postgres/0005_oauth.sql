-- OAuth 2.1 authorization server state for the grants package. Every
-- secret (client secret, authorization code, access token id, refresh
-- token) is stored as its SHA-256 hash, never in clear. Times are Unix
-- milliseconds (UTC), as in the other tables.
CREATE TABLE oauth_clients (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    secret_hash   TEXT NOT NULL DEFAULT '',   -- '' for public clients
    auth_method   TEXT NOT NULL,              -- none, client_secret_basic, client_secret_post
    redirect_uris TEXT NOT NULL,              -- JSON array, matched exactly
    native        INTEGER NOT NULL DEFAULT 0, -- loopback redirects: any port (RFC 8252)
    created_at    BIGINT NOT NULL
);

-- A grant is one consent: an API key's holder let a client act for the
-- key's account with at most the key's scopes, for one resource.
CREATE TABLE oauth_grants (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    key_id     TEXT NOT NULL,
    client_id  TEXT NOT NULL REFERENCES oauth_clients(id),
    scopes     TEXT NOT NULL,                 -- space-separated, sorted
    resource   TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX oauth_grants_account ON oauth_grants(account_id);

-- Authorization requests between /authorize and the code exchange. The
-- request itself is kept as JSON; code_hash is set once the user consents.
CREATE TABLE oauth_requests (
    id         TEXT PRIMARY KEY,
    client_id  TEXT NOT NULL,
    request    TEXT NOT NULL,
    grant_id   TEXT NOT NULL DEFAULT '',
    code_hash  TEXT UNIQUE,
    code_used  INTEGER NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX oauth_requests_expires ON oauth_requests(expires_at);

-- Access token ids (the jti of the JWT) and refresh tokens, hashed.
CREATE TABLE oauth_tokens (
    hash       TEXT PRIMARY KEY,
    kind       TEXT NOT NULL,                 -- access or refresh
    grant_id   TEXT NOT NULL REFERENCES oauth_grants(id),
    client_id  TEXT NOT NULL,
    scopes     TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at    BIGINT,                        -- a refresh token rotated away
    revoked_at BIGINT
);
CREATE INDEX oauth_tokens_grant ON oauth_tokens(grant_id);

-- The authorization server's token signing key, shared by replicas.
CREATE TABLE oauth_signing_keys (
    id          TEXT PRIMARY KEY,
    private_pem TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);
