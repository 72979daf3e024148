-- provider_type takes only the seed's values (builtin, preset, mcp,
-- unknown): tools made from tool definitions were journaled as "custom"
-- and are the preset provider now (journal.ProviderPreset; the provider
-- id still tells the config's presets from an account's definitions).
UPDATE tool_executions SET provider_type = 'preset' WHERE provider_type = 'custom';
UPDATE tool_executions SET provider_type = 'unknown'
    WHERE provider_type NOT IN ('builtin', 'preset', 'mcp', 'unknown');
-- Callers name pages now (X-Toolhost-Page-Id, _meta toolhost/page-id):
-- GET /tools/call-records?page_id= finds them without a floor.
CREATE INDEX tool_executions_page ON tool_executions(account_id, page_id) WHERE page_id IS NOT NULL;
