package v1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/internal/store/storetest"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server/v1/fakeupstream"
	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/approval"
)

// approvalFormats are the three formats: how a request asks for approval
// of random_choice, and how a continuation answers an approval.
var approvalFormats = []struct {
	name, path string
	// first is the request; policies are the executor's (Messages has no
	// require_approval: the account's policy asks there).
	first    string
	policies map[string]approval.Policy
	// answer is the continuation of first answering id with approve;
	// args are the arguments the approval is bound to.
	answer func(id, args string, approve bool) string
}{
	{"responses", "/v1/responses",
		`{"model":"fake-1","input":"pick a colour","tools":[{"type":"mcp","server_label":"LABEL","allowed_tools":["random_choice"],"require_approval":"always"}]}`, nil,
		func(id, args string, approve bool) string {
			req, _ := json.Marshal(map[string]any{"type": "mcp_approval_request", "id": id, "server_label": "LABEL", "name": "random_choice", "arguments": args})
			return fmt.Sprintf(`{"model":"fake-1","input":[{"role":"user","content":"pick a colour"},%s,{"type":"mcp_approval_response","approval_request_id":%q,"approve":%t}],"tools":[{"type":"mcp","server_label":"LABEL","allowed_tools":["random_choice"],"require_approval":"always"}]}`, req, id, approve)
		}},
	{"chat", "/v1/chat/completions",
		`{"model":"fake-1","messages":[{"role":"user","content":"pick a colour"}],"tools":[{"type":"mcp","server_label":"LABEL","allowed_tools":["random_choice"],"require_approval":"always"}]}`, nil,
		func(id, _ string, approve bool) string {
			return fmt.Sprintf(`{"model":"fake-1","messages":[{"role":"user","content":"pick a colour"},{"role":"assistant","content":null}],"tools":[{"type":"mcp","server_label":"LABEL","allowed_tools":["random_choice"],"require_approval":"always"}],"LABEL":{"approvals":[{"approval_request_id":%q,"approve":%t,"reason":"ok"}]}}`, id, approve)
		}},
	{"messages", "/v1/messages",
		`{` + messagesPrefix + `,"messages":[{"role":"user","content":"pick a colour"}],` + mcpServers + `,"tools":[` + toolsetDice + `]}`,
		map[string]approval.Policy{"random_choice": approval.Always},
		func(id, _ string, approve bool) string {
			return fmt.Sprintf(`{`+messagesPrefix+`,"messages":[{"role":"user","content":"pick a colour"}],`+mcpServers+`,"tools":[`+toolsetDice+`],"LABEL":{"approvals":[{"approval_request_id":%q,"approve":%t}]}}`, id, approve)
		}},
}

// decidedVia is each format's Decision.Via.
var decidedVia = map[string]string{"responses": approval.ViaV1Responses, "chat": approval.ViaV1Chat, "messages": approval.ViaV1Messages}

var (
	createdChunk = regexp.MustCompile(`("created": ?)[0-9]+`)
	approvalIDs  = regexp.MustCompile(`apr_[0-9a-f]{24}`)
	expiry       = regexp.MustCompile(`[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z`)
	approvedCall = regexp.MustCompile(`call_[0-9a-f]{24}`)
)

// maskApprovals replaces approval ids, the call ids derived from them and
// expiry times, for golden files.
func maskApprovals(b []byte) []byte {
	b = approvalIDs.ReplaceAll(b, []byte("apr_ID"))
	b = expiry.ReplaceAll(b, []byte("EXPIRY"))
	return approvedCall.ReplaceAll(b, []byte("call_APPROVED"))
}

// approvalScript: the model asks for random_choice, then answers (after
// the approved call; a Messages continuation that sends the paused turn
// back makes it the third answer).
var approvalScript = fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: []fakeupstream.Round{
	{ToolCalls: []fakeupstream.ToolCall{call("call_a", "random_choice", `{"options":["red"]}`)}},
	{Content: "Picked."},
	{Content: "Picked."},
}}}}

func approvalStoresOf(t *testing.T) map[string]approval.Store {
	out := map[string]approval.Store{"memory": approval.NewMemory()}
	for name, db := range storetest.Open(t, "v1_approvals") {
		out[name] = db
	}
	return out
}

// A call that needs approval is not run: the response ends with the
// approval request (golden, both upstream protocols, streamed and not),
// the journal shows the call refused approval_required with its approval
// id, and the model is not called again. The answer approving it runs
// exactly that invocation once under the approval (prepared carries the
// confirmation), the model gets its result and answers; the approval is
// consumed, decided through the face by the caller's key.
func TestApprovalPausesThenRunsOnce(t *testing.T) {
	for _, f := range approvalFormats {
		for _, p := range protocols {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/%s", f.name, p, modeName(stream)), func(t *testing.T) {
					e := newExecEnv(t, "toolhost", p, approvalScript, tools.Options{Policies: f.policies})
					first, answer := f.first, f.answer
					check := func(name string, body []byte) {
						t.Helper()
						switch {
						case stream && f.name == "chat":
							body = normalizedStream(t, body, "toolhost")
						case stream:
							body = clockFree(t, p, normalizedEvents(t, body, "toolhost"))
						default:
							body = clockFree(t, p, normalizedBody(t, body, "toolhost"))
						}
						if p == loop.DialectAnthropic {
							// No creation time from an Anthropic upstream: the clock's.
							body = createdChunk.ReplaceAll(body, []byte("${1}0"))
						}
						golden(t, fmt.Sprintf("approval_%s.%s.%s.%s.golden", name, f.name, p, modeName(stream)), maskApprovals(body))
					}
					if stream {
						first = withStream(first)
					}
					resp := e.postTo(f.path, first, map[string]string{"X-Test-Key": "key_1"})
					if resp.status != http.StatusOK {
						t.Fatalf("status %d: %s", resp.status, resp.body)
					}
					check("paused", resp.body)
					id := approvalIDs.FindString(string(resp.body))
					if id == "" {
						t.Fatalf("no approval id in %s", resp.body)
					}
					if n := len(e.fake.Requests()); n != 1 {
						t.Errorf("the model was called %d times before the approval, want 1", n)
					}
					checkRan(t, e, 0)
					a := getApproval(t, e, id)
					if a.Status != approval.Pending || a.Tool != "random_choice" {
						t.Errorf("approval %+v", a)
					}
					checkJournal(t, e, id, journal.StateAuthorizationRejected)

					next := answer(id, string(a.Args), true)
					if stream {
						next = withStream(next)
					}
					resp = e.postTo(f.path, next, map[string]string{"X-Test-Key": "key_1"})
					if resp.status != http.StatusOK {
						t.Fatalf("status %d: %s", resp.status, resp.body)
					}
					check("approved", resp.body)
					checkRan(t, e, 1)
					a = getApproval(t, e, id)
					if a.Status != approval.Consumed || a.DecidedBy != "key_1" || a.DecidedVia != decidedVia[f.name] {
						t.Errorf("approval after the answer %+v", a)
					}
					checkJournal(t, e, id, journal.StateObserved)
					if got := lastToolResult(t, e); !strings.Contains(got, "red") {
						t.Errorf("the model got %q, not the result", got)
					}
					if f.name == "responses" && !strings.Contains(string(resp.body), `"approval_request_id":"`+id+`"`) {
						t.Errorf("no mcp_call with approval_request_id in %s", resp.body)
					}

					// The same answer again runs nothing.
					resp = e.postTo(f.path, answer(id, string(a.Args), true), nil)
					if resp.status != http.StatusConflict || !strings.Contains(string(resp.body), "approval_not_pending") {
						t.Errorf("replayed answer: %d %s", resp.status, resp.body)
					}
					checkRan(t, e, 1)
				})
			}
		}
	}
}

// Declining tells the model, which answers; nothing runs. A changed echo
// (another tool, other arguments) or an unknown id refuses the request
// before anything is decided or run.
func TestApprovalDeclinedOrTamperedRunsNothing(t *testing.T) {
	for name, st := range approvalStoresOf(t) {
		for _, f := range approvalFormats {
			t.Run(name+"/"+f.name, func(t *testing.T) {
				e := newExecEnv(t, "toolhost", loop.DialectOpenAI, approvalScript, tools.Options{Policies: f.policies, Approvals: st})
				resp := e.postTo(f.path, f.first, nil)
				id := approvalIDs.FindString(string(resp.body))
				if resp.status != http.StatusOK || id == "" {
					t.Fatalf("status %d: %s", resp.status, resp.body)
				}
				args := string(getApproval(t, e, id).Args)
				if f.name == "responses" {
					for _, tampered := range []string{
						strings.Replace(f.answer(id, args, true), `\"red\"`, `\"blue\"`, 1),
						strings.Replace(f.answer(id, args, true), `"name":"random_choice"`, `"name":"get_time"`, 1),
					} {
						resp = e.postTo(f.path, tampered, nil)
						if resp.status != http.StatusBadRequest || !strings.Contains(string(resp.body), `"approval_request_mismatch"`) {
							t.Errorf("tampered echo: %d %s", resp.status, resp.body)
						}
					}
					if a := getApproval(t, e, id); a.Status != approval.Pending {
						t.Errorf("a refused answer decided the approval: %+v", a)
					}
				}
				unknown := strings.ReplaceAll(f.answer(id, args, true), id, "apr_00000000000000000000000f")
				resp = e.postTo(f.path, unknown, nil)
				if resp.status != http.StatusBadRequest || !strings.Contains(string(resp.body), `"approval_request_unknown"`) {
					t.Errorf("unknown id: %d %s", resp.status, resp.body)
				}
				if n := len(e.fake.Requests()); n != 1 {
					t.Errorf("refused answers reached the model: %d calls", n)
				}

				resp = e.postTo(f.path, f.answer(id, args, false), nil)
				if resp.status != http.StatusOK {
					t.Fatalf("decline: %d %s", resp.status, resp.body)
				}
				if got := lastToolResult(t, e); !strings.Contains(got, "approval_declined") || !strings.Contains(got, "random_choice") || !strings.Contains(got, id) {
					t.Errorf("the model got %q", got)
				}
				if !strings.Contains(string(resp.body), "Picked.") {
					t.Errorf("the model did not answer: %s", resp.body)
				}
				checkRan(t, e, 0)
				if a := getApproval(t, e, id); a.Status != approval.Declined {
					t.Errorf("declined approval %+v", a)
				}
				// Sent again as history, the decline is told again, not refused.
				resp = e.postTo(f.path, f.answer(id, args, false), nil)
				if resp.status != http.StatusOK {
					t.Errorf("declined history: %d %s", resp.status, resp.body)
				}
				checkRan(t, e, 0)
			})
		}
	}
}

// Conversation history that holds the mcp_call an approval ran runs
// nothing again: the approval items are history. Two identical answers
// sent at once run the call once. On every approval store.
func TestApprovalRunsOnceOnEveryStore(t *testing.T) {
	f := approvalFormats[0]
	for name, st := range approvalStoresOf(t) {
		t.Run(name, func(t *testing.T) {
			e := newExecEnv(t, "toolhost", loop.DialectOpenAI, approvalScript, tools.Options{Approvals: st})
			resp := e.postTo(f.path, f.first, nil)
			id := approvalIDs.FindString(string(resp.body))
			args := string(getApproval(t, e, id).Args)
			answer := f.answer(id, args, true)
			var wg sync.WaitGroup
			results := make([]response, 2)
			for i := range results {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i] = e.postTo(f.path, answer, nil)
				}()
			}
			wg.Wait()
			checkRan(t, e, 1)
			var done response
			for _, r := range results {
				switch {
				case r.status == http.StatusOK && strings.Contains(string(r.body), `"approval_request_id":"`+id+`"`):
					done = r
				case r.status == http.StatusConflict, r.status == http.StatusOK:
					// Lost the race: refused, or paused again for a new approval.
				default:
					t.Errorf("answer: %d %s", r.status, r.body)
				}
			}
			if done.body == nil {
				t.Fatalf("no answer ran the call: %d %s / %d %s", results[0].status, results[0].body, results[1].status, results[1].body)
			}
			var out struct {
				Output []json.RawMessage `json:"output"`
			}
			if err := json.Unmarshal(done.body, &out); err != nil {
				t.Fatal(err)
			}
			var req map[string]any
			if err := json.Unmarshal([]byte(strings.ReplaceAll(answer, "LABEL", "toolhost")), &req); err != nil {
				t.Fatal(err)
			}
			input := req["input"].([]any)
			for _, it := range out.Output {
				input = append(input, json.RawMessage(it))
			}
			req["input"] = append(input, map[string]any{"role": "user", "content": "and again?"})
			body, _ := json.Marshal(req)
			resp = e.postTo(f.path, string(body), nil)
			if resp.status != http.StatusOK {
				t.Fatalf("history: %d %s", resp.status, resp.body)
			}
			checkRan(t, e, 1)
			if a := getApproval(t, e, id); a.Status != approval.Consumed {
				t.Errorf("approval %+v", a)
			}
		})
	}
}

// checkRan: random_choice ran n times (successfully) in e.
func checkRan(t *testing.T, e *env, n int) {
	t.Helper()
	ran := 0
	e.exec.mu.Lock()
	for _, o := range e.exec.outcomes {
		if o.Tool == "random_choice" && !o.IsError {
			ran++
		}
	}
	e.exec.mu.Unlock()
	if ran != n {
		t.Errorf("random_choice ran %d times, want %d", ran, n)
	}
}

func getApproval(t *testing.T, e *env, id string) approval.Approval {
	t.Helper()
	a, err := e.exec.GetApproval(context.Background(), "", id)
	if err != nil {
		t.Fatalf("approval %s: %v", id, err)
	}
	return a
}

// checkJournal: the newest random_choice record of the journal is in
// state with the approval's id in its events (the refusal's details, or
// the confirmation of prepared).
func checkJournal(t *testing.T, e *env, id string, state journal.State) {
	t.Helper()
	ctx := context.Background()
	st := e.exec.Journal().Store()
	recs, _, err := st.List(ctx, journal.Query{AccountID: tools.LocalAccount, ToolName: "random_choice", Limit: 1})
	if err != nil || len(recs) != 1 {
		t.Fatalf("journal: %v %d", err, len(recs))
	}
	evs, err := st.Events(ctx, tools.LocalAccount, recs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	found := false
	for _, ev := range evs {
		states = append(states, string(ev.State))
		if strings.Contains(string(ev.Detail), id) && (state != journal.StateObserved || ev.State == journal.StatePrepared) {
			found = true
		}
	}
	if recs[0].State != state || !found {
		t.Errorf("journal record in %s with events %v (approval %s found: %t), want %s", recs[0].State, states, id, found, state)
	}
}

// lastToolResult is the text of the last tool result the model was sent,
// in the OpenAI protocol (tool message) or Anthropic's (tool_result).
func lastToolResult(t *testing.T, e *env) string {
	t.Helper()
	reqs := e.upstreamRequests()
	msgs, _ := reqs[len(reqs)-1]["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		if m["role"] == "tool" {
			s, _ := m["content"].(string)
			return s
		}
		blocks, _ := m["content"].([]any)
		for _, b := range blocks {
			bm, _ := b.(map[string]any)
			if bm["type"] == "tool_result" {
				return fmt.Sprint(bm["content"])
			}
		}
	}
	return ""
}

// The filter forms of require_approval: a tool under never runs, one under
// always or named in neither list asks (OpenAI's default for unnamed
// tools), a name in both asks; and "never" does not loosen a tool whose
// own policy asks. One round asks for both tools: the one that may run
// runs, the run pauses for the other.
func TestRequireApprovalForms(t *testing.T) {
	two := fakeupstream.Script{Conversations: []fakeupstream.Conversation{{Rounds: []fakeupstream.Round{
		{ToolCalls: []fakeupstream.ToolCall{call("call_a", "random_choice", `{"options":["red"]}`), call("call_t", "get_time", `{"timezone":"UTC"}`)}},
		{Content: "Done."},
	}}}}
	cases := []struct {
		name     string
		policy   string
		policies map[string]approval.Policy
		asks     []string // tools that ask, in the model's order
	}{
		{"never_names", `{"never":{"tool_names":["get_time"]}}`, nil, []string{"random_choice"}},
		{"always_names", `{"always":{"tool_names":["random_choice"]},"never":{"tool_names":["get_time"]}}`, nil, []string{"random_choice"}},
		{"both_lists", `{"always":{"tool_names":["get_time"]},"never":{"tool_names":["get_time","random_choice"]}}`, nil, []string{"get_time"}},
		{"read_only", `{"never":{"read_only":true}}`, nil, nil},
		{"always_string", `"always"`, nil, []string{"random_choice", "get_time"}},
		{"never_does_not_loosen", `"never"`, map[string]approval.Policy{"get_time": approval.Always}, []string{"get_time"}},
		{"absent_does_not_loosen", ``, map[string]approval.Policy{"get_time": approval.Always}, []string{"get_time"}},
		// Two declarations: each one's policy holds for its own tools.
		{"two_declarations", `TWO`, nil, []string{"random_choice"}},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			t.Run(tc.name+"/"+modeName(stream), func(t *testing.T) {
				e := newExecEnv(t, "toolhost", loop.DialectOpenAI, two, tools.Options{Policies: tc.policies})
				decl := `{"type":"mcp","server_label":"LABEL","allowed_tools":["random_choice","get_time"]}`
				switch tc.policy {
				case "":
				case "TWO":
					decl = `{"type":"mcp","server_label":"LABEL","allowed_tools":["get_time"],"require_approval":"never"},` +
						`{"type":"mcp","server_label":"LABEL","allowed_tools":["random_choice"],"require_approval":"always"}`
				default:
					decl = strings.TrimSuffix(decl, "}") + `,"require_approval":` + tc.policy + `}`
				}
				body := `{"model":"fake-1","input":"both","tools":[` + decl + `]}`
				if stream {
					body = withStream(body)
				}
				resp := e.postTo("/v1/responses", body, nil)
				if resp.status != http.StatusOK {
					t.Fatalf("status %d: %s", resp.status, resp.body)
				}
				var asked []string
				for _, tl := range []string{"random_choice", "get_time"} {
					if strings.Contains(string(resp.body), `"name":"`+tl+`","server_label":"toolhost","type":"mcp_approval_request"`) {
						asked = append(asked, tl)
					}
				}
				if strings.Join(asked, ",") != strings.Join(tc.asks, ",") {
					t.Errorf("asked for %v, want %v: %s", asked, tc.asks, resp.body)
				}
				wantCalls := 1
				if len(tc.asks) == 0 {
					wantCalls = 2 // nothing paused: the model answered
				}
				if n := len(e.fake.Requests()); n != wantCalls {
					t.Errorf("%d model calls, want %d", n, wantCalls)
				}
				ran := 0
				e.exec.mu.Lock()
				defer e.exec.mu.Unlock()
				for _, o := range e.exec.outcomes {
					if !o.IsError {
						ran++
					}
				}
				if ran != 2-len(tc.asks) {
					t.Errorf("%d calls ran, want %d", ran, 2-len(tc.asks))
				}
			})
		}
	}
}

// Hostile answers: too many, a huge reason (kept to the store's bound),
// ids with Unicode tricks (unknown, quoted safely).
func TestApprovalAnswersHostile(t *testing.T) {
	e := newExecEnv(t, "toolhost", loop.DialectOpenAI, approvalScript, tools.Options{})
	f := approvalFormats[1]
	var many []string
	for i := range 65 {
		many = append(many, fmt.Sprintf(`{"approval_request_id":"apr_%024x","approve":true}`, i))
	}
	body := strings.Replace(f.first, `"tools"`, `"LABEL":{"approvals":[`+strings.Join(many, ",")+`]},"tools"`, 1)
	resp := e.postTo(f.path, body, nil)
	if resp.status != http.StatusBadRequest || !strings.Contains(string(resp.body), "at most 64") {
		t.Errorf("65 answers: %d %s", resp.status, resp.body)
	}
	for _, id := range []string{"apr_\u202e000000000000000000000", strings.Repeat("apr_", 5000), "APR_000000000000000000000000"} {
		b, _ := json.Marshal(id)
		body := strings.Replace(f.first, `"tools"`, `"LABEL":{"approvals":[{"approval_request_id":`+string(b)+`,"approve":true}]},"tools"`, 1)
		resp := e.postTo(f.path, body, nil)
		if resp.status != http.StatusBadRequest || !strings.Contains(string(resp.body), "approval_request_unknown") || len(resp.body) > 4096 {
			t.Errorf("id %.20q: %d %.300s", id, resp.status, resp.body)
		}
	}
	resp = e.postTo(f.path, f.first, nil)
	id := approvalIDs.FindString(string(resp.body))
	long := strings.Repeat("因为", 3000)
	body = strings.Replace(f.answer(id, "", false), `"reason":"ok"`, `"reason":"`+long+`"`, 1)
	if resp := e.postTo(f.path, body, nil); resp.status != http.StatusOK {
		t.Fatalf("long reason: %d %s", resp.status, resp.body)
	}
	if a := getApproval(t, e, id); a.Status != approval.Declined || len(a.Reason) > approval.MaxReasonBytes {
		t.Errorf("declined with a %d-byte reason: %s", len(a.Reason), a.Status)
	}
}

// count_tokens counts the calls approval answers add, as the loop would put
// them, deciding nothing; an unknown approval is the same 400.
func TestCountTokensWithApprovalAnswers(t *testing.T) {
	for _, p := range protocols {
		t.Run(string(p), func(t *testing.T) {
			f := approvalFormats[2]
			e := newExecEnv(t, "toolhost", p, approvalScript, tools.Options{Policies: f.policies})
			resp := e.postTo(f.path, f.first, nil)
			id := approvalIDs.FindString(string(resp.body))
			count := func(body string) (int, response) {
				t.Helper()
				r := e.postTo("/v1/messages/count_tokens", body, nil)
				var got struct {
					InputTokens int `json:"input_tokens"`
				}
				_ = json.Unmarshal(r.body, &got)
				return got.InputTokens, r
			}
			without, r := count(f.first)
			if r.status != http.StatusOK {
				t.Fatalf("%d %s", r.status, r.body)
			}
			with, r := count(f.answer(id, "", true))
			if r.status != http.StatusOK || with <= without {
				t.Errorf("with the answer: %d tokens (without %d): %d %s", with, without, r.status, r.body)
			}
			if _, r := count(strings.ReplaceAll(f.answer(id, "", true), id, "apr_00000000000000000000000f")); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "approval_request_unknown") {
				t.Errorf("unknown approval: %d %s", r.status, r.body)
			}
			if a := getApproval(t, e, id); a.Status != approval.Pending {
				t.Errorf("count_tokens decided the approval: %+v", a)
			}
			checkRan(t, e, 0)
		})
	}
}
