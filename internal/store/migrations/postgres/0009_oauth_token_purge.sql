-- Tokens that can never be used again are purged (grants.Store.PurgeTokens)
-- instead of kept forever. names_grant marks a refresh token that names its
-- grant under the authorization server's MAC: a reuse of it is recognised
-- without its row, so it is deleted once rotated away; older refresh tokens
-- (0) stay rotated, for reuse detection, until their client goes.
-- token_issued keeps "this client was issued a token" once its tokens are
-- purged (PurgeClients expires a client never issued one much sooner).
ALTER TABLE oauth_tokens ADD COLUMN names_grant INTEGER NOT NULL DEFAULT 0;
ALTER TABLE oauth_clients ADD COLUMN token_issued INTEGER NOT NULL DEFAULT 0;
UPDATE oauth_clients SET token_issued = 1
    WHERE EXISTS (SELECT 1 FROM oauth_tokens t WHERE t.client_id = oauth_clients.id);
CREATE INDEX oauth_tokens_expires ON oauth_tokens(expires_at);
CREATE INDEX oauth_tokens_rotated ON oauth_tokens(used_at) WHERE used_at IS NOT NULL;
CREATE INDEX oauth_tokens_revoked ON oauth_tokens(revoked_at) WHERE revoked_at IS NOT NULL;
