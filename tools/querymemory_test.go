package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/identity"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/session"
)

// query_memory on every store: word search over a session's variables,
// ranking, limits, pages past one store read, tenancy, and hostile
// queries and values.
func TestQueryMemory(t *testing.T) {
	ctx := context.Background()
	for name, st := range sessionStores(t) {
		t.Run(name, func(t *testing.T) {
			e, err := tools.NewExecutor(tools.Options{Sessions: st, Variables: st})
			if err != nil {
				t.Fatal(err)
			}
			base := time.UnixMilli(1_735_689_600_000)
			set := func(account, sid, name, value string, at int) {
				t.Helper()
				if err := st.SetVariable(ctx, account, sid, session.Variable{Name: name, Value: json.RawMessage(value), UpdatedAt: base.Add(time.Duration(at) * time.Minute)}); err != nil {
					t.Fatal(err)
				}
			}
			set("a", "s1", "quest.dragon", `{"goal":"slay the Dragon","reward":{"gold":500}}`, 1)
			set("a", "s1", "npc.ana", `{"role":"smith","note":"knows where the dragon sleeps"}`, 2)
			set("a", "s1", "weather", `"rain"`, 3)
			set("a", "s1", "escaped", `"caf\u00e9 \u00c9CLAIR"`, 4)
			set("a", "s1", "deep", strings.Repeat(`[`, 500)+`"buried treasure"`+strings.Repeat(`]`, 500), 5)
			set("a", "s1", "big", `"`+strings.Repeat("dragon ", 9000)+`"`, 0)
			set("b", "s1", "quest.dragon", `"another account's dragon"`, 9)
			// More than one store page (200) of variables in another session.
			for i := range 450 {
				set("a", "s2", fmt.Sprintf("v%03d", i), fmt.Sprintf(`{"n":%d,"tag":"%s"}`, i, map[bool]string{true: "even", false: "odd"}[i%2 == 0]), i)
			}
			type result struct {
				Query   string `json:"query"`
				Total   int    `json:"total"`
				Scanned int    `json:"scanned"`
				Matches []struct {
					Name       string          `json:"name"`
					Score      int             `json:"score"`
					Snippet    string          `json:"snippet"`
					ValueBytes int             `json:"value_bytes"`
					Value      json.RawMessage `json:"value"`
				} `json:"matches"`
			}
			run := func(account, sid, args string) (result, *tools.Outcome) {
				t.Helper()
				out, err := e.Execute(ctx, tools.Proposal{Tool: "query_memory", Args: json.RawMessage(args), Caller: tools.Caller{Identity: identity.Identity{AccountID: account}, SessionID: sid}})
				if err != nil {
					t.Fatal(err)
				}
				var r result
				if !out.IsError {
					if err := json.Unmarshal(out.Structured, &r); err != nil {
						t.Fatal(err)
					}
				}
				return r, out
			}
			names := func(r result) string {
				var n []string
				for _, m := range r.Matches {
					n = append(n, m.Name)
				}
				return strings.Join(n, ",")
			}

			// A name hit ranks first; case is ignored; the big value is
			// found but not carried whole.
			r, out := run("a", "s1", `{"query":"DRAGON"}`)
			if out.IsError || names(r) != "quest.dragon,big,npc.ana" || r.Total != 3 || r.Scanned != 6 {
				t.Fatalf("dragon: %s %+v", out.Text, r)
			}
			if r.Matches[1].Value != nil || r.Matches[1].ValueBytes < 60000 || len([]rune(r.Matches[1].Snippet)) > 162 {
				t.Errorf("big value: %+v", r.Matches[1])
			}
			if string(r.Matches[2].Value) == "" || !strings.Contains(r.Matches[2].Snippet, "dragon sleeps") {
				t.Errorf("npc.ana: %+v", r.Matches[2])
			}
			// Every word must occur; the account's other session and
			// another account's same session are not searched.
			if r, _ := run("a", "s1", `{"query":"dragon smith"}`); names(r) != "npc.ana" {
				t.Errorf("dragon smith: %s", names(r))
			}
			if r, _ := run("b", "s1", `{"query":"dragon"}`); names(r) != "quest.dragon" || r.Scanned != 1 {
				t.Errorf("account b: %+v", r)
			}
			// Numbers, escaped text, deep nesting, limits and pages.
			for q, want := range map[string]string{
				`{"query":"500"}`:                                 "quest.dragon",
				`{"query":"café éclair"}`:                         "escaped",
				`{"query":"buried"}`:                              "deep",
				`{"query":"nothing-like-this"}`:                   "",
				`{"query":"ｄｒａｇｏｎ"}`:                              "",
				`{"query":"dragon","limit":1}`:                    "quest.dragon",
				`{"query":"dra\u200bgon"}`:                        "",
				`{"query":"(.*)+$ [a-z"}`:                         "",
				`{"query":"   rain   rain  RAIN"}`:                "weather",
				`{"query":"` + strings.Repeat("rain ", 40) + `"}`: "weather",
			} {
				if r, out := run("a", "s1", q); out.IsError || names(r) != want {
					t.Errorf("%s: %q, want %q (%s)", q, names(r), want, out.Text)
				}
			}
			r, _ = run("a", "s2", `{"query":"even","limit":50}`)
			if r.Total != 225 || r.Scanned != 450 || len(r.Matches) != 50 || r.Matches[0].Name != "v448" {
				t.Errorf("pages: total %d scanned %d, %d matches, first %s", r.Total, r.Scanned, len(r.Matches), names(r)[:10])
			}
			// Refusals: no session, no words, too many words, a huge or
			// wrong query, a duplicated key.
			for args, code := range map[string]string{
				`{"query":"dragon"}`: tools.CodeSessionRequired,
				`{"query":"   "}`:    tools.CodeInvalidArgs,
				`{"query":"a b c d e f g h i j k l m n o p q"}`: tools.CodeInvalidArgs,
				`{"query":"` + strings.Repeat("x", 201) + `"}`:  tools.CodeInvalidArgs,
				`{"query":"dragon","limit":51}`:                 tools.CodeInvalidArgs,
				`{"query":"dragon","query":"rain"}`:             tools.CodeInvalidJSON,
				`{"query":["dragon"]}`:                          tools.CodeInvalidArgs,
				`{"query":"dragon","where":"everywhere"}`:       tools.CodeInvalidArgs,
			} {
				sid := "s1"
				if code == tools.CodeSessionRequired {
					sid = ""
				}
				if _, out := run("a", sid, args); out.Code != code {
					t.Errorf("%.60s: code %q, want %q (%s)", args, out.Code, code, out.Message)
				}
			}
		})
	}
}
