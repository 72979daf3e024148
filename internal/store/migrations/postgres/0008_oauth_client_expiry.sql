-- Registered OAuth clients expire (grants.Store.PurgeClients): used_at is
-- the last time a client started an authorization, was issued a token or
-- had its metadata document stored; a client unused for long enough, with
-- no token still valid, is deleted with its grants, tokens and requests.
-- Existing clients count from their last request or token.
ALTER TABLE oauth_clients ADD COLUMN used_at BIGINT NOT NULL DEFAULT 0;
UPDATE oauth_clients SET used_at = GREATEST(created_at,
    COALESCE((SELECT MAX(t.created_at) FROM oauth_tokens t WHERE t.client_id = oauth_clients.id), 0),
    COALESCE((SELECT MAX(r.created_at) FROM oauth_requests r WHERE r.client_id = oauth_clients.id), 0));
CREATE INDEX oauth_clients_used ON oauth_clients(used_at);
CREATE INDEX oauth_tokens_client ON oauth_tokens(client_id, expires_at);
CREATE INDEX oauth_grants_client ON oauth_grants(client_id);
CREATE INDEX oauth_requests_client ON oauth_requests(client_id);
