package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/config"
	"github.com/toolhost/toolhost/internal/config/duration"
)

func loadFile(t *testing.T, file string) (config.Config, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	return config.Load(path)
}

// Every number of the file out of its range is refused by Load (and so by
// toolhost check and serve) with its full key and what it accepts, instead
// of silently taking the default or being used as it is.
func TestLoadRefusesNumbersOutOfRange(t *testing.T) {
	tests := []struct{ file, want string }{
		{`{"journal": {"commit_delay": "-1s"}}`, `journal.commit_delay "-1s": want from "0s" (never waits) to "1s"`},
		{`{"journal": {"commit_delay": "-1ns"}}`, `journal.commit_delay "-1ns"`},
		{`{"journal": {"commit_delay": "1h"}}`, `journal.commit_delay "1h0m0s": want from "0s" (never waits) to "1s"`},
		{`{"journal": {"commit_delay": "2562047h"}}`, `journal.commit_delay "2562047h0m0s"`},
		{`{"journal": {"apply_interval": "-200ms"}}`, `journal.apply_interval "-200ms": want from "0s" (the default, 200ms) to "1m0s"`},
		{`{"journal": {"apply_interval": "1m0.000000001s"}}`, `journal.apply_interval "1m0.000000001s": want from "0s" (the default, 200ms) to "1m0s"`},
		{`{"journal": {"apply_interval": "2562047h"}}`, `journal.apply_interval "2562047h0m0s"`},
		{`{"journal": {"idempotency_retention": "721h"}}`, `journal.idempotency_retention "721h0m0s": want from "0s" (the default, 24h) to "720h0m0s"`},
		{`{"journal": {"idempotency_retention": "-2562047h"}}`, `journal.idempotency_retention "-2562047h0m0s"`},
		{`{"journal": {"max_args_bytes": -1}}`, `journal.max_args_bytes -1: want 0 (the default, 64 KiB) or more`},
		{`{"journal": {"max_result_bytes": -9223372036854775808}}`, `journal.max_result_bytes -9223372036854775808`},
		{`{"journal": {"max_batch": -256}}`, `journal.max_batch -256`},
		{`{"hosted": {"max_tool_rounds": -1}}`, `hosted.max_tool_rounds -1: want 0 (the default, 8) or more`},
		{`{"hosted": {"max_tool_rounds_limit": -32}}`, `hosted.max_tool_rounds_limit -32`},
		{`{"hosted": {"max_tool_rounds": 33}}`, `hosted.max_tool_rounds 33: want at most hosted.max_tool_rounds_limit (32)`},
		{`{"hosted": {"max_tool_rounds_limit": 4}}`, `hosted.max_tool_rounds 8: want at most hosted.max_tool_rounds_limit (4)`},
		{`{"hosted": {"max_tool_rounds": 9223372036854775807, "max_tool_rounds_limit": 64}}`, `hosted.max_tool_rounds 9223372036854775807`},
		{`{"hosted": {"max_body_bytes": -1}}`, `hosted.max_body_bytes -1`},
		{`{"hosted": {"count_tokens_max_bytes": -1}}`, `hosted.count_tokens_max_bytes -1`},
		{`{"hosted": {"idempotency_max_bytes": -1}}`, `hosted.idempotency_max_bytes -1`},
		{`{"hosted": {"idempotency_account_bytes": -1}}`, `hosted.idempotency_account_bytes -1`},
		{`{"hosted": {"routes": [{"name": "a"}, {"name": "b", "idle_timeout": "-1s"}]}}`, `hosted.routes[1].idle_timeout "-1s"`},
		{`{"hosted": {"routes": [{"name": "a", "header_timeout": "-1m"}]}}`, `hosted.routes[0].header_timeout "-1m0s"`},
		{`{"hosted": {"routes": [{"name": "a", "request_timeout": "-10m"}]}}`, `hosted.routes[0].request_timeout`},
		{`{"hosted": {"routes": [{"name": "a", "prices": {"*": {"input": 1, "output": -3}}}]}}`, `hosted.routes[0].prices["*"]`},
		{`{"keys": {"prices": {"web_search": 1, "run_code": -0.5}}}`, `keys.prices["run_code"] -0.5: want 0 or more`},
		{`{"mcp": {"sessions_per_key": -1}}`, `mcp.sessions_per_key -1: want 0 (the default, 256) or more`},
		{`{"mcp": {"sessions": -4096}}`, `mcp.sessions -4096`},
		{`{"mcp": {"max_client_info_bytes": -1}}`, `mcp.max_client_info_bytes -1: want 0 (the default, 8 KiB) to 2147483647`},
		{`{"mcp": {"max_client_info_bytes": 9223372036854775807}}`, `mcp.max_client_info_bytes 9223372036854775807`},
		{`{"mcp": {"max_body_bytes": -1}}`, `mcp.max_body_bytes -1`},
		{`{"tools": {"default_timeout": "-1s"}}`, `tools.default_timeout "-1s": want from "0s" (the default, 60s) to "5m0s"`},
		{`{"tools": {"default_timeout": "5m0.000000001s"}}`, `tools.default_timeout "5m0.000000001s"`},
		{`{"tools": {"default_timeout": "2562047h"}}`, `tools.default_timeout "2562047h0m0s"`},
		{`{"tools": {"max_result_bytes": -1}}`, `tools.max_result_bytes -1`},
		{`{"tools": {"max_definitions_per_account": -2}}`, `tools.max_definitions_per_account -2: want -1 (no cap), 0 (the default, 256) or more`},
		{`{"mcp_servers": {"ttl": "-5m"}}`, `mcp_servers.ttl "-5m0s"`},
		{`{"mcp_servers": {"ttl": "24h0m0.001s"}}`, `mcp_servers.ttl "24h0m0.001s": want from "0s" (the default, 5m) to "24h0m0s"`},
		{`{"mcp_servers": {"probe_timeout": "-3s"}}`, `mcp_servers.probe_timeout "-3s"`},
		{`{"mcp_servers": {"max_concurrent": -8}}`, `mcp_servers.max_concurrent -8`},
		{`{"mcp_servers": {"max_result_bytes": -1}}`, `mcp_servers.max_result_bytes -1`},
		{`{"mcp_servers": {"max_per_account": -16}}`, `mcp_servers.max_per_account -16`},
		{`{"auth": {"oauth": {"access_token_ttl": "-1h"}}}`, `auth.oauth.access_token_ttl "-1h0m0s"`},
		{`{"auth": {"oauth": {"refresh_token_ttl": "-1s"}}}`, `auth.oauth.refresh_token_ttl "-1s"`},
		{`{"auth": {"oauth": {"access_token_ttl": "25h"}}}`, `auth.oauth.access_token_ttl "25h0m0s": want from "0s" (the default, 1h) to "24h0m0s"`},
		{`{"auth": {"oauth": {"refresh_token_ttl": "8761h"}}}`, `auth.oauth.refresh_token_ttl "8761h0m0s": want from "0s" (the default, 720h) to "8760h0m0s"`},
		{`{"auth": {"oauth": {"registrations_per_minute": -10}}}`, `auth.oauth.registrations_per_minute -10`},
		{`{"auth": {"oauth": {"registrations_per_minute_total": -1}}}`, `auth.oauth.registrations_per_minute_total -1`},
		{`{"auth": {"oauth": {"unauthorized_client_ttl": "59m"}}}`, `auth.oauth.unauthorized_client_ttl "59m0s": want "0s" (the default, 24h) or from "1h0m0s" to "720h0m0s"`},
		{`{"auth": {"oauth": {"unauthorized_client_ttl": "1ns"}}}`, `auth.oauth.unauthorized_client_ttl "1ns"`},
		{`{"auth": {"oauth": {"unauthorized_client_ttl": "-24h"}}}`, `auth.oauth.unauthorized_client_ttl "-24h0m0s"`},
		{`{"auth": {"oauth": {"unauthorized_client_ttl": "721h"}}}`, `auth.oauth.unauthorized_client_ttl "721h0m0s"`},
		{`{"auth": {"oauth": {"idle_client_ttl": "10m"}}}`, `auth.oauth.idle_client_ttl "10m0s": want "0s" (the default, 2160h) or from "1h0m0s" to "8760h0m0s"`},
		{`{"auth": {"oauth": {"idle_client_ttl": "8761h"}}}`, `auth.oauth.idle_client_ttl "8761h0m0s"`},
		{`{"auth": {"oauth": {"idle_client_ttl": "-2562047h"}}}`, `auth.oauth.idle_client_ttl "-2562047h0m0s"`},
		{`{"shutdown_timeout": "-10s"}`, `shutdown_timeout "-10s": want "0s" (the default, 10s) or longer`},
		{`{"server": {"read_header_timeout": "-1s"}}`, `server.read_header_timeout "-1s"`},
		{`{"server": {"idle_timeout": "-1s"}}`, `server.idle_timeout "-1s"`},
		{`{"server": {"body_timeout": "-1s"}}`, `server.body_timeout "-1s"`},
		{`{"server": {"max_header_bytes": -1}}`, `server.max_header_bytes -1`},
		{`{"server": {"max_connections": -2}}`, `server.max_connections -2: want -1 (no cap), 0 (the default, 4096) or more`},
		{`{"server": {"max_connections_per_ip": -100}}`, `server.max_connections_per_ip -100`},
		{`{"server": {"memory_limit_mib": -2}}`, `server.memory_limit_mib -2: want -1 (no limit), 0 (the default, 384) or 128 to 8796093022207`},
		{`{"server": {"memory_limit_mib": 1}}`, `server.memory_limit_mib 1: want`},
		{`{"server": {"memory_limit_mib": 127}}`, `server.memory_limit_mib 127`},
		{`{"server": {"memory_limit_mib": 8796093022208}}`, `server.memory_limit_mib 8796093022208`},
		{`{"fetch": {"connect_timeout": "-1s"}}`, `fetch.connect_timeout "-1s": want "0s" (the default, 10s) or longer`},
		{`{"fetch": {"timeout": "-30s"}}`, `fetch.timeout "-30s"`},
		{`{"fetch": {"max_html_bytes": -1}}`, `fetch.max_html_bytes -1`},
		{`{"fetch": {"max_extract_text_bytes": -1}}`, `fetch.max_extract_text_bytes -1`},
		{`{"fetch": {"max_pdf_bytes": -1}}`, `fetch.max_pdf_bytes -1`},
		{`{"fetch": {"max_pdf_pages": -300}}`, `fetch.max_pdf_pages -300`},
		{`{"fetch": {"max_redirects": -1}}`, `fetch.max_redirects -1: want 0 (follow none) or more (the default is 5)`},
		{`{"fetch": {"per_host_concurrency": -4}}`, `fetch.per_host_concurrency -4`},
		{`{"fetch": {"max_in_flight": -16}}`, `fetch.max_in_flight -16`},
		{`{"fetch": {"body_budget_bytes": -1}}`, `fetch.body_budget_bytes -1`},
		{`{"fetch": {"queue_timeout": "-1s"}}`, `fetch.queue_timeout "-1s"`},
		{`{"fetch": {"cache_max_bytes": -1}}`, `fetch.cache_max_bytes -1`},
		{`{"fetch": {"robots_ttl": "-1h"}}`, `fetch.robots_ttl "-1h0m0s"`},
		{`{"fetch": {"robots_ttl": "48h"}}`, `fetch.robots_ttl "48h0m0s": want from "0s" (the default, 1h) to "24h0m0s"`},
		{`{"fetch": {"cache_ttl": "25h"}}`, `fetch.cache_ttl "25h0m0s": want a negative duration (no page cache), "0s" (the default, 5m) or up to "24h0m0s"`},
		{`{"fetch": {"cache_ttl": "2562047h"}}`, `fetch.cache_ttl "2562047h0m0s"`},
		{`{"search": {"deadline": "-10s"}}`, `search.deadline "-10s"`},
		{`{"search": {"cache": {"ttl": "-10m"}}}`, `search.cache.ttl "-10m0s"`},
		{`{"search": {"cache": {"ttl": "24h1s"}}}`, `search.cache.ttl "24h0m1s": want from "0s" (the default, 10m) to "24h0m0s"`},
		{`{"search": {"cache": {"max_entries": -2}}}`, `search.cache.max_entries -2: want -1 (no cache), 0 (the default, 1000) or more`},
		{`{"search": {"providers": [{"kind": "html"}, {"kind": "html", "timeout": "-8s"}]}}`, `search.providers[1].timeout "-8s"`},
		{`{"sandbox": {"memory_limit_mib": -256}}`, `sandbox.memory_limit_mib -256: want 0 (the default, 256) to 4096`},
		{`{"sandbox": {"memory_limit_mib": 4097}}`, `sandbox.memory_limit_mib 4097`},
		{`{"sandbox": {"memory_limit_mib": 268435456}}`, `sandbox.memory_limit_mib 268435456`}, // × 16 pages wraps uint32 to 0
		{`{"sandbox": {"stdout_limit": -1}}`, `sandbox.stdout_limit -1`},
		{`{"sandbox": {"stderr_limit": -1}}`, `sandbox.stderr_limit -1`},
		{`{"sandbox": {"concurrency": -1}}`, `sandbox.concurrency -1`},
		{`{"sandbox": {"concurrency": 9223372036854775807}}`, `sandbox.concurrency 9223372036854775807`},
		{`{"sandbox": {"queue_length": -1}}`, `sandbox.queue_length -1`},
		{`{"sandbox": {"per_account_concurrency": -1}}`, `sandbox.per_account_concurrency -1`},
		{`{"sandbox": {"pool_memory_mib": -64}}`, `sandbox.pool_memory_mib -64`},
		{`{"sandbox": {"python_pool": -2}}`, `sandbox.python_pool -2: want -1 (no pool), 0 (memory and demand decide) to 2147483647`},
		{`{"sandbox": {"javascript_pool": -9223372036854775808}}`, `sandbox.javascript_pool -9223372036854775808`},
		{`{"sandbox": {"workdir_limit_mib": -1}}`, `sandbox.workdir_limit_mib -1`},
		{`{"sandbox": {"workdir_limit_mib": 8796093022208}}`, `sandbox.workdir_limit_mib 8796093022208`}, // << 20 overflows
		{`{"sandbox": {"out_files_max": -20}}`, `sandbox.out_files_max -20`},
		{`{"sandbox": {"out_file_bytes": -1}}`, `sandbox.out_file_bytes -1`},
		{`{"sandbox": {"out_total_bytes": -1}}`, `sandbox.out_total_bytes -1`},
		{`{"sandbox": {"js_max_stack_kib": -512}}`, `sandbox.js_max_stack_kib -512`},
		{`{"sandbox": {"js_max_stack_kib": 9007199254740992}}`, `sandbox.js_max_stack_kib 9007199254740992`}, // << 10 overflows
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := loadFile(t, tt.file)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load(%s) = %v, want an error containing %q", tt.file, err, tt.want)
			}
		})
	}
}

// The values at the edges of the ranges, and the negatives that are
// documented (a cap of -1 is none, "-1s" keeps MCP sessions, a negative
// cache TTL or hedge delay turns those off), still load.
func TestLoadKeepsDocumentedValues(t *testing.T) {
	for _, file := range []string{
		`{"mcp": {"session_timeout": "-1s"}}`,
		`{"mcp": {"session_timeout": "-5m"}}`,
		`{"tools": {"max_definitions_per_account": -1}, "mcp_servers": {"max_per_account": -1}}`,
		`{"server": {"max_connections": -1, "max_connections_per_ip": -1, "memory_limit_mib": -1}}`,
		`{"server": {"memory_limit_mib": 128}}`,
		`{"server": {"memory_limit_mib": 8796093022207}}`,
		`{"server": {"memory_limit_mib": 0}}`,
		`{"sandbox": {"python_pool": -1, "javascript_pool": -1, "memory_limit_mib": 4096}}`,
		`{"fetch": {"cache_ttl": "-1s"}, "search": {"hedge_delay": "-1s", "cache": {"max_entries": -1}}}`,
		`{"journal": {"commit_delay": "0s", "apply_interval": "0s", "max_batch": 0}}`,
		`{"journal": {"commit_delay": "1s"}}`,
		`{"tools": {"default_timeout": "5m"}}`,
		// The longest of each duration with an upper bound.
		`{"journal": {"apply_interval": "1m", "idempotency_retention": "720h"}}`,
		`{"mcp_servers": {"ttl": "24h"}, "search": {"cache": {"ttl": "24h"}}}`,
		`{"fetch": {"cache_ttl": "24h", "robots_ttl": "24h"}}`,
		`{"fetch": {"cache_ttl": "-2562047h"}}`,
		`{"auth": {"oauth": {"access_token_ttl": "24h", "refresh_token_ttl": "8760h"}}}`,
		`{"auth": {"oauth": {"unauthorized_client_ttl": "1h", "idle_client_ttl": "1h"}}}`,
		`{"auth": {"oauth": {"unauthorized_client_ttl": "720h", "idle_client_ttl": "8760h"}}}`,
		`{"auth": {"oauth": {"unauthorized_client_ttl": "0s", "idle_client_ttl": "0s"}}}`,
		`{"keys": {"prices": {"web_search": 0}}, "hosted": {"routes": [{"name": "a", "prices": {"*": {"input": 0, "output": 2.5}}}]}}`,
		`{"hosted": {"max_tool_rounds": 0, "max_body_bytes": 9223372036854775807}}`,
		`{"hosted": {"max_tool_rounds": 64, "max_tool_rounds_limit": 64}}`,
		`{"hosted": {"max_tool_rounds": 2, "max_tool_rounds_limit": 4}}`,
	} {
		if _, err := loadFile(t, file); err != nil {
			t.Errorf("Load(%s) = %v, want no error", file, err)
		}
	}
}

// A per-key or per-account cap above the cap it is a share of is refused
// with both keys and their values (defaults filled in and said so), and the
// consistent combinations load.
func TestLoadRefusesASharesAboveItsWhole(t *testing.T) {
	tests := []struct{ file, want string }{
		{`{"mcp": {"sessions_per_key": 5000}}`,
			`mcp.sessions_per_key 5000: want at most mcp.sessions (4096, the default): one API key could hold every session`},
		{`{"mcp": {"sessions": 100}}`, `mcp.sessions_per_key 256 (the default): want at most mcp.sessions (100)`},
		{`{"mcp": {"sessions_per_key": 11, "sessions": 10}}`, `mcp.sessions_per_key 11: want at most mcp.sessions (10)`},
		{`{"mcp": {"sessions_per_key": 9223372036854775807, "sessions": 1}}`, `mcp.sessions_per_key 9223372036854775807: want at most mcp.sessions (1)`},
		{`{"sandbox": {"concurrency": 4, "per_account_concurrency": 5}}`,
			`sandbox.per_account_concurrency 5: want at most sandbox.concurrency (4): one account's share of the run slots cannot exceed the slots`},
		{`{"sandbox": {"concurrency": 1, "per_account_concurrency": 9223372036854775807}}`, `sandbox.per_account_concurrency 9223372036854775807`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := loadFile(t, tt.file)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load(%s) = %v, want an error containing %q", tt.file, err, tt.want)
			}
		})
	}
	for _, file := range []string{
		`{"mcp": {"sessions_per_key": 10, "sessions": 10}}`,
		`{"mcp": {"sessions_per_key": 4096}}`,
		`{"mcp": {"sessions_per_key": 1, "sessions": 1}}`,
		`{"mcp": {"sessions": 256}}`,
		`{"sandbox": {"concurrency": 4, "per_account_concurrency": 4}}`,
		`{"sandbox": {"concurrency": 1}}`,
		// concurrency 0 is the CPUs of the machine that serves: not
		// knowable here, so the sandbox lowers the share to them.
		`{"sandbox": {"per_account_concurrency": 64}}`,
	} {
		if _, err := loadFile(t, file); err != nil {
			t.Errorf("Load(%s) = %v, want no error", file, err)
		}
	}
}

// A refresh token that expires before the access token it renews is
// refused, with both keys and their values (defaults filled in and said
// so): the client could never refresh, and would sign in again at every
// expiry. Equal or longer loads.
func TestLoadRefusesARefreshTokenShorterThanTheAccessToken(t *testing.T) {
	tests := []struct{ file, want string }{
		{`{"auth": {"oauth": {"access_token_ttl": "2h", "refresh_token_ttl": "1h"}}}`,
			`auth.oauth.refresh_token_ttl "1h0m0s": want at least auth.oauth.access_token_ttl ("2h0m0s")`},
		{`{"auth": {"oauth": {"refresh_token_ttl": "30m"}}}`,
			`auth.oauth.refresh_token_ttl "30m0s": want at least auth.oauth.access_token_ttl ("1h0m0s", the default)`},
		{`{"auth": {"oauth": {"access_token_ttl": "24h", "refresh_token_ttl": "23h59m59s"}}}`,
			`auth.oauth.refresh_token_ttl "23h59m59s": want at least auth.oauth.access_token_ttl ("24h0m0s")`},
		{`{"auth": {"oauth": {"enabled": false, "access_token_ttl": "2h", "refresh_token_ttl": "1ns"}}}`,
			`auth.oauth.refresh_token_ttl "1ns": want at least auth.oauth.access_token_ttl ("2h0m0s")`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := loadFile(t, tt.file)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load(%s) = %v, want an error containing %q", tt.file, err, tt.want)
			}
		})
	}
	for _, file := range []string{
		`{"auth": {"oauth": {"access_token_ttl": "1h", "refresh_token_ttl": "1h"}}}`,
		`{"auth": {"oauth": {"access_token_ttl": "24h"}}}`,
		`{"auth": {"oauth": {"refresh_token_ttl": "1h"}}}`,
		`{"auth": {"oauth": {"access_token_ttl": "5m", "refresh_token_ttl": "10m"}}}`,
	} {
		if _, err := loadFile(t, file); err != nil {
			t.Errorf("Load(%s) = %v, want no error", file, err)
		}
	}
}

// hosted.budgets: a key left out keeps its default, 0 turns a bound off,
// and a negative, a huge value or a wrong type is refused at load with the
// key's path and what it wants.
func TestLoadHostedBudgets(t *testing.T) {
	refused := []struct{ file, want string }{
		{`{"hosted": {"budgets": {"tool_calls": -1}}}`, `hosted.budgets.tool_calls -1: want 0 (no bound) to 100000`},
		{`{"hosted": {"budgets": {"tool_calls": 100001}}}`, `hosted.budgets.tool_calls 100001`},
		{`{"hosted": {"budgets": {"model_calls": -5}}}`, `hosted.budgets.model_calls -5: want 0 (no bound) to 1000`},
		{`{"hosted": {"budgets": {"model_calls": 9223372036854775807}}}`, `hosted.budgets.model_calls 9223372036854775807`},
		{`{"hosted": {"budgets": {"result_bytes": -262144}}}`, `hosted.budgets.result_bytes -262144: want 0 (no bound) to 1073741824`},
		{`{"hosted": {"budgets": {"result_bytes": 1073741825}}}`, `hosted.budgets.result_bytes 1073741825`},
		{`{"hosted": {"budgets": {"cost": -1}}}`, `hosted.budgets.cost -1: want 0 (no bound) to 9007199254740992`},
		{`{"hosted": {"budgets": {"wall_clock": "-1s"}}}`, `hosted.budgets.wall_clock "-1s": want from "0s" (no bound) to "24h0m0s"`},
		{`{"hosted": {"budgets": {"wall_clock": "2562047h"}}}`, `hosted.budgets.wall_clock "2562047h0m0s"`},
		{`{"hosted": {"budgets": {"final_grace": "11m"}}}`, `hosted.budgets.final_grace "11m0s": want from "0s" (the default, 30s) to "10m0s"`},
		// Wrong types: the decoder names the field.
		{`{"hosted": {"budgets": {"tool_calls": "10"}}}`, `hosted.budgets.tool_calls of type int`},
		{`{"hosted": {"budgets": {"tool_calls": 1.5}}}`, `hosted.budgets.tool_calls of type int`},
		{`{"hosted": {"budgets": {"wall_clock": 300}}}`, `wall_clock`},
		{`{"hosted": {"budgets": {"result_bytes": 1e999}}}`, `result_bytes`},
		{`{"hosted": {"budgets": {"tool_call": 10}}}`, `unknown field "tool_call"`},
		{`{"hosted": {"budgets": [10]}}`, `hosted.budgets of type config.Budgets`},
	}
	for _, tt := range refused {
		t.Run(tt.want, func(t *testing.T) {
			_, err := loadFile(t, tt.file)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load(%s) = %v, want an error containing %q", tt.file, err, tt.want)
			}
		})
	}
	def := config.Default().Hosted.Budgets
	loaded := []struct {
		file string
		want config.Budgets
	}{
		{`{}`, def},
		{`{"hosted": {"budgets": {}}}`, def},
		{`{"hosted": {"budgets": {"tool_calls": 10}}}`, config.Budgets{ToolCalls: 10, ResultBytes: def.ResultBytes, WallClock: def.WallClock, FinalGrace: def.FinalGrace}},
		{`{"hosted": {"budgets": {"tool_calls": 0, "result_bytes": 0, "wall_clock": "0s"}}}`, config.Budgets{FinalGrace: def.FinalGrace}},
		{`{"hosted": {"budgets": {"model_calls": 1000, "tool_calls": 100000, "result_bytes": 1073741824, "cost": 9007199254740992, "wall_clock": "24h", "final_grace": "10m"}}}`,
			config.Budgets{ModelCalls: 1000, ToolCalls: 100000, ResultBytes: 1 << 30, Cost: 1 << 53, WallClock: duration.Duration(24 * time.Hour), FinalGrace: duration.Duration(10 * time.Minute)}},
	}
	for _, tt := range loaded {
		c, err := loadFile(t, tt.file)
		if err != nil {
			t.Errorf("Load(%s) = %v", tt.file, err)
			continue
		}
		if c.Hosted.Budgets != tt.want {
			t.Errorf("Load(%s) budgets %+v, want %+v", tt.file, c.Hosted.Budgets, tt.want)
		}
	}
	if def.ToolCalls != 128 || def.ResultBytes != 4<<20 || def.WallClock.D() != 10*time.Minute || def.ModelCalls != 0 || def.Cost != 0 {
		t.Errorf("defaults %+v", def)
	}
}

// A route's protocol is one of the three clients; any other value is
// refused by Load with the route's key and the values it accepts, and the
// three (and the empty default) load.
func TestLoadChecksTheRouteProtocol(t *testing.T) {
	for _, p := range config.RouteProtocols {
		if _, err := loadFile(t, `{"hosted": {"routes": [{"name": "a", "protocol": "`+p+`"}]}}`); err != nil {
			t.Fatalf("protocol %q: %v", p, err)
		}
	}
	for _, p := range []string{"Responses", "chat", "openai-responses"} {
		_, err := loadFile(t, `{"hosted": {"routes": [{"name": "a"}, {"name": "b", "protocol": "`+p+`"}]}}`)
		want := `hosted.routes[1].protocol "` + p + `": want "openai" (Chat Completions, the default), "anthropic" (Messages) or "responses"`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("protocol %q: err = %v, want one containing %s", p, err, want)
		}
	}
}
