-- seq is the order access and refresh tokens were created in, across
-- replicas: the purge keeps a grant's newest access tokens, and tokens
-- created in the same millisecond (created_at's precision) are ranked by
-- it instead of by their hashes. SQLite needs no column: a token's rowid
-- is one more than the largest in the table when it is inserted. Tokens
-- stored before this get numbers in no particular order; created_at
-- still ranks them first.
ALTER TABLE oauth_tokens ADD COLUMN seq BIGSERIAL;
