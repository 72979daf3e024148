-- A key's bounds of one hosted /v1 loop (keys.HostedBudgets): 0 leaves
-- the server's hosted.budgets.
ALTER TABLE api_keys ADD COLUMN hosted_model_calls INTEGER NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN hosted_tool_calls INTEGER NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN hosted_result_bytes BIGINT NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN hosted_wall_clock_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN hosted_cost BIGINT NOT NULL DEFAULT 0;
