package v1_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	v1 "github.com/toolhost/toolhost/server/v1"
	"github.com/toolhost/toolhost/server/v1/fakeupstream"
)

// Every 400 case of the seed (and ours), stream and not: the status, the
// machine-readable reason, and the body as a golden file.
func TestChatCompletionsRejections(t *testing.T) {
	const user = `"model":"fake-1","messages":[{"role":"user","content":"hi"}]`
	const decl = `{"type":"mcp","server_label":"LABEL","allowed_tools":["random_choice","get_time"],"require_approval":"never"}`
	disabled := func(o *v1.Options, _ *recordingExec) { o.Enabled = false }
	cases := []struct {
		name     string
		body     string
		opt      envOption
		status   int
		reason   string
		contains string // the message must say this
	}{
		{"other_server_label", `{` + user + `,"tools":[{"type":"mcp","server_label":"other","allowed_tools":["web_search"],"require_approval":"never"}]}`, nil, 400, "server_tool_unsupported", `"other"`},
		{"tool_choice_other_server_label", `{` + user + `,"tools":[` + decl + `],"tool_choice":{"type":"mcp","server_label":"other","name":"get_time"}}`, nil, 400, "server_tool_unsupported", `"other"`},
		{"unknown_extension_key", `{` + user + `,"tools":[` + decl + `],"LABEL":{"max_tool_rounds":2,"temperature":1}}`, nil, 400, "unknown_extension_key", `"temperature"`},
		{"extension_not_object", `{` + user + `,"tools":[` + decl + `],"LABEL":6}`, nil, 400, "invalid_extension", "max_tool_rounds"},
		{"max_tool_rounds_negative", `{` + user + `,"tools":[` + decl + `],"LABEL":{"max_tool_rounds":-1}}`, nil, 400, "invalid_max_tool_rounds", "integer"},
		{"max_tool_rounds_fraction", `{` + user + `,"tools":[` + decl + `],"LABEL":{"max_tool_rounds":1.5}}`, nil, 400, "invalid_max_tool_rounds", "integer"},
		{"max_tool_rounds_too_large", `{` + user + `,"tools":[` + decl + `],"LABEL":{"max_tool_rounds":1000}}`, nil, 400, "invalid_max_tool_rounds", "32"},
		{"max_tool_rounds_without_hosted_tools", `{` + user + `,"LABEL":{"max_tool_rounds":2}}`, nil, 400, "max_tool_rounds_without_hosted_tools", "declares no hosted tools"},
		{"hosted_tools_disabled", `{` + user + `,"tools":[` + decl + `]}`, disabled, 400, "hosted_tools_disabled", "not enabled"},
		{"caller_function_named_like_hosted_tool", `{` + user + `,"tools":[{"type":"function","function":{"name":"get_time","parameters":{"type":"object"}}},` + decl + `]}`, nil, 400, "tool_name_conflict", `"get_time"`},
		{"tool_choice_names_tool_not_enabled", `{` + user + `,"tools":[` + decl + `],"tool_choice":{"type":"mcp","server_label":"LABEL","name":"roll_dice"}}`, nil, 400, "tool_choice_not_enabled", `"roll_dice"`},
		{"tool_choice_mcp_without_declaration", `{` + user + `,"tool_choice":{"type":"mcp","server_label":"LABEL","name":"get_time"}}`, nil, 400, "tool_choice_not_enabled", "enables none"},
		{"unknown_hosted_tool", `{` + user + `,"tools":[{"type":"mcp","server_label":"LABEL","allowed_tools":["get_time","teleport"]}]}`, nil, 400, "unknown_hosted_tool", `"teleport"`},
		{"empty_allowed_tools", `{` + user + `,"tools":[{"type":"mcp","server_label":"LABEL","allowed_tools":[]}]}`, nil, 400, "no_hosted_tool_enabled", "allowed_tools"},
		{"require_approval_unknown_value", `{` + user + `,"tools":[{"type":"mcp","server_label":"LABEL","require_approval":"sometimes"}]}`, nil, 400, "require_approval_invalid", `"always"`},
		{"require_approval_unknown_key", `{` + user + `,"tools":[{"type":"mcp","server_label":"LABEL","require_approval":{"sometimes":{"tool_names":["get_time"]}}}]}`, nil, 400, "require_approval_invalid", "sometimes"},
		{"require_approval_unknown_tool", `{` + user + `,"tools":[{"type":"mcp","server_label":"LABEL","require_approval":{"never":{"tool_names":["get_time"]},"always":{"tool_names":["teleport"]}}}]}`, nil, 400, "unknown_hosted_tool", `"teleport"`},
		{"approvals_without_hosted_tools", `{` + user + `,"LABEL":{"approvals":[{"approval_request_id":"apr_000000000000000000000000","approve":true}]}}`, nil, 400, "approvals_without_hosted_tools", "declares none"},
		{"approval_answer_without_approve", `{` + user + `,"tools":[` + decl + `],"LABEL":{"approvals":[{"approval_request_id":"apr_000000000000000000000000"}]}}`, nil, 400, "approval_response_invalid", "approve"},
		{"approval_answer_unknown_key", `{` + user + `,"tools":[` + decl + `],"LABEL":{"approvals":[{"approval_request_id":"apr_000000000000000000000000","approve":true,"scope":"all"}]}}`, nil, 400, "approval_response_invalid", "scope"},
		{"approval_answered_twice", `{` + user + `,"tools":[` + decl + `],"LABEL":{"approvals":[{"approval_request_id":"apr_000000000000000000000000","approve":true},{"approval_request_id":"apr_000000000000000000000000","approve":false}]}}`, nil, 400, "approval_response_invalid", "twice"},
		{"approval_unknown", `{` + user + `,"tools":[` + decl + `],"LABEL":{"approvals":[{"approval_request_id":"apr_000000000000000000000000","approve":true}]}}`, nil, 400, "approval_request_unknown", "apr_000000000000000000000000"},
		{"n_greater_than_one", `{` + user + `,"n":2,"tools":[` + decl + `]}`, nil, 400, "n_unsupported_with_hosted_tools", "n greater than 1"},
		{"invalid_json", `{"model":`, nil, 400, "invalid_json", "JSON"},
		{"missing_messages", `{"model":"fake-1"}`, nil, 400, "invalid_request", "messages"},
		// Rule 6: no route with tool calling for the model.
		{"no_tool_capable_route", `{"model":"text-1","messages":[{"role":"user","content":"hi"}],"tools":[` + decl + `]}`, nil, 503, "model_unavailable", "tool calling"},
		{"unknown_model", `{"model":"nobody-1","messages":[{"role":"user","content":"hi"}],"tools":[` + decl + `]}`, nil, 503, "model_unavailable", "nobody-1"},
	}
	for _, label := range labels {
		for _, tc := range cases {
			for _, stream := range []bool{false, true} {
				mode := "json"
				if stream {
					mode = "stream"
				}
				t.Run(label+"/"+tc.name+"/"+mode, func(t *testing.T) {
					var opts []envOption
					if tc.opt != nil {
						opts = append(opts, tc.opt)
					}
					e := newEnv(t, label, []fakeupstream.Round{{Content: "unused"}}, opts...)
					body := tc.body
					if stream && strings.HasPrefix(body, `{"model":"`) && strings.HasSuffix(body, "}") {
						body = `{"stream":true,` + body[1:]
					}
					resp := e.post(context.Background(), body, nil)
					if resp.status != tc.status {
						t.Fatalf("status %d, want %d: %s", resp.status, tc.status, resp.body)
					}
					var got struct {
						Error struct {
							Message string         `json:"message"`
							Code    string         `json:"code"`
							Details map[string]any `json:"details"`
						} `json:"error"`
					}
					if err := json.Unmarshal(resp.body, &got); err != nil {
						t.Fatal(err)
					}
					if got.Error.Details["reason"] != tc.reason || got.Error.Code != tc.reason {
						t.Errorf("reason %v code %q, want %s", got.Error.Details["reason"], got.Error.Code, tc.reason)
					}
					if !strings.Contains(got.Error.Message, strings.ReplaceAll(tc.contains, "LABEL", label)) {
						t.Errorf("message %q does not say %s", got.Error.Message, tc.contains)
					}
					if n := len(e.fake.Requests()); n != 0 {
						t.Errorf("a refused request reached the upstream %d times", n)
					}
					golden(t, "reject_"+tc.name+".golden", normalizedBody(t, resp.body, label))
				})
			}
		}
	}
}

// The headers/authorization/server_description of a declaration are ignored,
// and max_tool_calls does not limit hosted calls.
func TestDeclarationIgnoresHeadersAndMaxToolCalls(t *testing.T) {
	for _, label := range labels {
		t.Run(label, func(t *testing.T) {
			e := newEnv(t, label, []fakeupstream.Round{
				{ToolCalls: []fakeupstream.ToolCall{call("c1", "sleep", `{"ms":0}`), call("c2", "sleep", `{"ms":0}`), call("c3", "sleep", `{"ms":0}`)}},
				{Content: "done"},
			})
			resp := e.post(context.Background(), `{"model":"fake-1","messages":[{"role":"user","content":"x"}],"max_tool_calls":1,"tools":[{"type":"mcp","server_label":"LABEL","server_url":"https://example.invalid/mcp","authorization":"secret","headers":{"Authorization":"Bearer x"},"server_description":"d","allowed_tools":{"tool_names":["sleep"]},"require_approval":"never"}]}`, nil)
			if resp.status != http.StatusOK {
				t.Fatalf("status %d: %s", resp.status, resp.body)
			}
			if n := len(e.exec.Proposals()); n != 3 {
				t.Errorf("executed %d calls, want 3 (max_tool_calls ignored)", n)
			}
			for _, b := range e.fake.Requests() {
				if strings.Contains(string(b), "secret") || strings.Contains(string(b), "max_tool_calls") {
					t.Errorf("declaration fields leaked upstream: %s", b)
				}
			}
		})
	}
}
