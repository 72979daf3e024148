package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/internal/store/storetest"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/session"
)

// sessionStores are the stores the session builtins run on: memory,
// SQLite and, when TOOLHOST_TEST_POSTGRES is set, PostgreSQL.
func sessionStores(t *testing.T) map[string]interface {
	session.Store
	session.VariableStore
} {
	out := map[string]interface {
		session.Store
		session.VariableStore
	}{"memory": session.NewMemStore()}
	for name, db := range storetest.Open(t, "sessiontools_test") {
		out[name] = db
	}
	return out
}

func TestSessionBuiltins(t *testing.T) {
	ctx := context.Background()
	for name, st := range sessionStores(t) {
		t.Run(name, func(t *testing.T) {
			e, err := tools.NewExecutor(tools.Options{Sessions: st, Variables: st})
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			char := &session.Character{ID: "char_1", Name: "艾拉", Description: "a ranger", Attributes: json.RawMessage(`{"hp":12}`)}
			for _, s := range []session.Session{
				{ID: "s1", AccountID: "a", Metadata: json.RawMessage(`{}`), Permissions: session.Default(), Character: char, CreatedAt: now, UpdatedAt: now},
				{ID: "loc", AccountID: tools.LocalAccount, Metadata: json.RawMessage(`{}`), Permissions: session.Default(), Character: char, CreatedAt: now, UpdatedAt: now},
				{ID: "bare", AccountID: "a", Metadata: json.RawMessage(`{}`), Permissions: session.Default(), CreatedAt: now, UpdatedAt: now},
			} {
				if err := st.CreateSession(ctx, s); err != nil {
					t.Fatal(err)
				}
			}
			big := `"` + strings.Repeat("x", session.MaxVariableBytes) + `"`
			cases := []struct {
				name, account, sid, tool, args string
				code, want                     string
			}{
				{"character", "a", "s1", "get_character_info", `{}`, "", `{"id":"char_1","name":"艾拉","description":"a ranger","attributes":{"hp":12}}`},
				{"a call without an account is the local account's", "", "loc", "get_character_info", `{}`, "", `"id":"char_1"`},
				{"no character", "a", "bare", "get_character_info", `{}`, tools.CodeNoCharacter, ""},
				{"no session", "a", "", "get_character_info", `{}`, tools.CodeSessionRequired, ""},
				{"another account's session has no character", "b", "s1", "get_character_info", `{}`, tools.CodeNoCharacter, ""},
				{"unset variable", "a", "s1", "get_variable", `{"name":"gold"}`, "", `{"found":false,"name":"gold","value":null}`},
				{"set", "a", "s1", "set_variable", `{"name":"gold","value":{"coins":[1,2],"note":"ü"}}`, "", ""},
				{"get what was set", "a", "s1", "get_variable", `{"name":"gold"}`, "", `"value":{"coins":[1,2],"note":"ü"}`},
				{"replace", "a", "s1", "set_variable", `{"name":"gold","value":7}`, "", ""},
				{"get the replacement", "a", "s1", "get_variable", `{"name":"gold"}`, "", `"value":7`},
				{"another session does not see it", "a", "bare", "get_variable", `{"name":"gold"}`, "", `"found":false`},
				{"another account does not see it", "b", "s1", "get_variable", `{"name":"gold"}`, "", `"found":false`},
				{"name too long", "a", "s1", "set_variable", `{"name":"` + strings.Repeat("n", 65) + `","value":1}`, tools.CodeInvalidArgs, ""},
				{"name with a zero-width space", "a", "s1", "set_variable", `{"name":"go\u200bld","value":1}`, tools.CodeInvalidArgs, ""},
				{"value missing", "a", "s1", "set_variable", `{"name":"x"}`, tools.CodeInvalidArgs, ""},
				{"duplicate keys", "a", "s1", "set_variable", `{"name":"x","name":"y","value":1}`, tools.CodeInvalidJSON, ""},
				{"value over 64 KiB", "a", "s1", "set_variable", `{"name":"big","value":` + big + `}`, tools.CodeVariableLimit, ""},
				{"no session for variables", "a", "", "get_variable", `{"name":"gold"}`, tools.CodeSessionRequired, ""},
			}
			for _, c := range cases {
				out, err := e.Execute(ctx, tools.Proposal{Tool: c.tool, Args: json.RawMessage(c.args),
					Caller: tools.Caller{Face: "mcp", SessionID: c.sid, Identity: identity.Identity{AccountID: c.account}}})
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				if out.Code != c.code {
					t.Errorf("%s: code %q (%s), want %q", c.name, out.Code, out.Message, c.code)
				}
				if c.want != "" && !strings.Contains(string(out.Structured), c.want) {
					t.Errorf("%s: %s, want it to contain %s", c.name, out.Structured, c.want)
				}
			}
		})
	}
}

// The 1,001st name of a session is refused; existing names can still be
// replaced, and another session is not affected.
func TestSetVariableKeepsTheLimitPerSession(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 1,000 names per store, seconds; runs in make test")
	}
	ctx := context.Background()
	for name, st := range sessionStores(t) {
		t.Run(name, func(t *testing.T) {
			now := time.Now()
			for i := range session.MaxVariablesPerSession {
				if err := st.SetVariable(ctx, "a", "s", session.Variable{Name: fmt.Sprint("v", i), Value: json.RawMessage(`1`), UpdatedAt: now}); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.SetVariable(ctx, "a", "s", session.Variable{Name: "one_more", Value: json.RawMessage(`1`), UpdatedAt: now}); err != session.ErrTooManyVariables {
				t.Fatalf("the 1,001st variable: %v", err)
			}
			if err := st.SetVariable(ctx, "a", "s", session.Variable{Name: "v0", Value: json.RawMessage(`2`), UpdatedAt: now}); err != nil {
				t.Fatalf("replacing at the limit: %v", err)
			}
			if v, err := st.GetVariable(ctx, "a", "s", "v0"); err != nil || string(v.Value) != "2" {
				t.Fatalf("v0 = %s, %v", v.Value, err)
			}
			if err := st.SetVariable(ctx, "a", "other", session.Variable{Name: "one_more", Value: json.RawMessage(`1`), UpdatedAt: now}); err != nil {
				t.Fatalf("another session: %v", err)
			}
			if err := st.SetVariable(ctx, "b", "s", session.Variable{Name: "one_more", Value: json.RawMessage(`1`), UpdatedAt: now}); err != nil {
				t.Fatalf("another account's session of the same id: %v", err)
			}
			// Deleting the session deletes its variables.
			if err := st.CreateSession(ctx, session.Session{ID: "s", AccountID: "a", Metadata: json.RawMessage(`{}`), Permissions: session.Default(), CreatedAt: now, UpdatedAt: now}); err != nil {
				t.Fatal(err)
			}
			if err := st.DeleteSession(ctx, "a", "s"); err != nil {
				t.Fatal(err)
			}
			if _, err := st.GetVariable(ctx, "a", "s", "v0"); err != session.ErrNoVariable {
				t.Fatalf("a variable outlived its session: %v", err)
			}
		})
	}
}

// The runtime catalog lists the session builtins, and a slot's deny list
// reaches set_variable as the seed's example has it.
func TestRuntimeCatalogListsTheSessionBuiltins(t *testing.T) {
	ctx := context.Background()
	st := session.NewMemStore()
	e, err := tools.NewExecutor(tools.Options{Sessions: st, Variables: st})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.TouchSession(ctx, "a", "s", time.Now()); err != nil {
		t.Fatal(err)
	}
	p := session.Default()
	p.SlotDenyList = map[string][]string{"verifier": {"set_variable"}}
	if err := st.SetSessionPermissions(ctx, "a", "s", p, time.Now()); err != nil {
		t.Fatal(err)
	}
	cat, err := e.Runtime(ctx, "a", "s", "verifier")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, tool := range cat.Tools {
		got[tool.Name] = tool.Availability + "/" + tool.SideEffectLevel + "/" + tool.ProviderType
	}
	want := map[string]string{"get_character_info": "available/none/builtin", "get_variable": "available/none/builtin", "set_variable": "unavailable/sandbox/builtin"}
	for n, w := range want {
		if got[n] != w {
			t.Errorf("%s: %q, want %q", n, got[n], w)
		}
	}
	out, err := e.Execute(ctx, tools.Proposal{Tool: "set_variable", Args: json.RawMessage(`{"name":"x","value":1}`),
		Caller: tools.Caller{Face: "mcp", SessionID: "s", Slot: "verifier", Identity: identity.Identity{AccountID: "a"}}})
	if err != nil || out.Code != tools.CodePermissionDenied {
		t.Fatalf("set_variable as verifier: %+v, %v", out, err)
	}
}
