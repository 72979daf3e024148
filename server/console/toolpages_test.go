package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/server/console"
)

const hostile = "<script>alert(1)</script><img src=x onerror=alert(2)>\u202eevil\u200b"

// postPage posts a form with the page's own CSRF token, from the
// console's origin, and returns the answer's status and body.
func (b *browser) postPage(path string, form url.Values) (int, string) {
	b.t.Helper()
	_, page := b.get("/console/overview")
	form.Set("csrf", csrfOf(b.t, page))
	req, _ := http.NewRequest(http.MethodPost, b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.base)
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// rest calls the REST routes as account, through the console's own
// in-process API (the fixture's mux), and decodes data.
func (f *fixture) rest(t *testing.T, account, method, path string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	}
	req, _ := http.NewRequest(method, f.srv.URL+"/api"+path, rd)
	req.Header.Set("Authorization", "Bearer "+f.secret[account])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		_ = json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

func TestDefinitionsPageActsThroughRESTAndItsTenancy(t *testing.T) {
	f := newFixture(t, console.Options{})
	acme, globex := f.signIn(t, "acme"), f.signIn(t, "globex")
	params := `{"type":"object","properties":{"q":{"type":"string"}}}`
	st, page := acme.postPage("/console/tool-definitions", url.Values{"name": {"lookup"}, "description": {hostile},
		"parameters": {params}, "side_effect_level": {"none"}, "enabled": {"true"}, "handler_type": {"none"}})
	if st != http.StatusCreated || strings.Contains(page, "<img src=x") || !strings.Contains(page, "&lt;img src=x") {
		t.Fatalf("create: %d; the description must be shown as text:\n%s", st, page)
	}
	var list struct {
		Data []struct{ ID, Name, Description string } `json:"data"`
	}
	f.rest(t, "acme", http.MethodGet, "/tools/definitions", nil, &list)
	if len(list.Data) != 1 || list.Data[0].Description != hostile {
		t.Fatalf("REST has %+v", list.Data)
	}
	id := list.Data[0].ID
	for _, tc := range []struct {
		name   string
		b      *browser
		path   string
		form   url.Values
		status int
		says   string
	}{
		{"a script handler is REST's 403 while scripts are off", acme, "/console/tool-definitions",
			url.Values{"name": {"scripted"}, "handler_type": {"script"}, "script": {"return 1"}, "side_effect_level": {"none"}}, http.StatusForbidden, "tool_script_handler_disabled"},
		{"parameters that are not JSON are refused before REST", acme, "/console/tool-definitions",
			url.Values{"name": {"bad"}, "parameters": {"{" + hostile}, "side_effect_level": {"none"}}, http.StatusBadRequest, "parameters: not JSON"},
		{"a schema REST refuses is its validation error", acme, "/console/tool-definitions",
			url.Values{"name": {"bad"}, "parameters": {`{"type":"string"}`}, "side_effect_level": {"none"}}, http.StatusBadRequest, "validation_error"},
		{"a hostile name is REST's validation error, as text", acme, "/console/tool-definitions",
			url.Values{"name": {hostile}, "side_effect_level": {"none"}}, http.StatusBadRequest, "validation_error: name"},
		{"another account cannot toggle it", globex, "/console/tool-definitions/" + id,
			url.Values{"action": {"toggle"}, "enabled": {"false"}}, http.StatusNotFound, "not_found"},
		{"another account cannot delete it", globex, "/console/tool-definitions/" + id,
			url.Values{"action": {"delete"}}, http.StatusNotFound, "not_found"},
		{"another account cannot update it", globex, "/console/tool-definitions/" + id,
			url.Values{"action": {"update"}, "name": {"stolen"}, "side_effect_level": {"none"}}, http.StatusNotFound, "not_found"},
		{"an unknown action", acme, "/console/tool-definitions/" + id, url.Values{"action": {hostile}}, http.StatusBadRequest, "the action must be"},
		{"the owner toggles it", acme, "/console/tool-definitions/" + id, url.Values{"action": {"toggle"}, "enabled": {"false"}}, http.StatusOK, "lookup disabled."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, page := tc.b.postPage(tc.path, tc.form)
			if st != tc.status || !strings.Contains(page, tc.says) {
				t.Errorf("%d, want %d saying %q:\n%s", st, tc.status, tc.says, page)
			}
			if strings.Contains(page, "<script>alert") || strings.Contains(page, "<img src=x") {
				t.Error("markup from the form became markup on the page")
			}
		})
	}
	if resp, _ := globex.get("/console/tool-definitions/" + id); resp.StatusCode != http.StatusNotFound {
		t.Errorf("another account's edit page: %d", resp.StatusCode)
	}
	var one struct {
		Data struct {
			Name    string `json:"name"`
			Enabled bool   `json:"enabled"`
		} `json:"data"`
	}
	f.rest(t, "acme", http.MethodGet, "/tools/definitions/"+id, nil, &one)
	if one.Data.Name != "lookup" || one.Data.Enabled {
		t.Errorf("after the posts REST has %+v; want lookup, disabled by its owner only", one.Data)
	}
}

func TestSessionPermissionsReplaceAndMergeAsTheSeedSays(t *testing.T) {
	f := newFixture(t, console.Options{})
	acme := f.signIn(t, "acme")
	if st, page := acme.postPage("/console/sessions", url.Values{"new_id": {"sess_p"}}); st != http.StatusCreated {
		t.Fatalf("create: %d\n%s", st, page)
	}
	steps := []struct {
		name   string
		form   url.Values
		status int
		want   string // the permissions' slot_allow_list after the step, as JSON
	}{
		{"replace: narrator's allow list", url.Values{"mode": {"put"}, "enabled": {"true"}, "allow_set.narrator": {"true"}, "allow.narrator": {"echo_args, echo_args"}},
			http.StatusOK, `{"narrator":["echo_args"]}`},
		{"merge: director's list joins, narrator's stays", url.Values{"mode": {"patch"}, "slot": {"director"}, "allow_change": {"true"}, "allow": {"delete_note"}},
			http.StatusOK, `{"director":["delete_note"],"narrator":["echo_args"]}`},
		{"merge: an empty list removes that slot's only", url.Values{"mode": {"patch"}, "slot": {"director"}, "allow_change": {"true"}, "allow": {""}},
			http.StatusOK, `{"narrator":["echo_args"]}`},
		{"merge: nothing to merge", url.Values{"mode": {"patch"}, "enabled": {"keep"}}, http.StatusBadRequest, `{"narrator":["echo_args"]}`},
		{"a hostile tool name is REST's validation error", url.Values{"mode": {"patch"}, "slot": {"narrator"}, "deny_change": {"true"}, "deny": {hostile}},
			http.StatusBadRequest, `{"narrator":["echo_args"]}`},
		{"a limit out of range is REST's validation error", url.Values{"mode": {"patch"}, "max_calls_per_turn": {"100001"}}, http.StatusBadRequest, `{"narrator":["echo_args"]}`},
		{"a limit that is no number is refused here", url.Values{"mode": {"patch"}, "max_calls_per_turn": {strings.Repeat("9x", 5000)}}, http.StatusBadRequest, `{"narrator":["echo_args"]}`},
		{"replace: without a list the slot has none", url.Values{"mode": {"put"}, "enabled": {"true"}}, http.StatusOK, `{}`},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			st, page := acme.postPage("/console/sessions/sess_p/permissions", s.form)
			if st != s.status || strings.Contains(page, "<img src=x") {
				t.Errorf("%d, want %d:\n%s", st, s.status, page)
			}
			var got struct {
				Data struct {
					Allow json.RawMessage `json:"slot_allow_list"`
				} `json:"data"`
			}
			f.rest(t, "acme", http.MethodGet, "/sessions/sess_p/tool-permissions", nil, &got)
			if string(got.Data.Allow) != s.want {
				t.Errorf("slot_allow_list %s, want %s", got.Data.Allow, s.want)
			}
		})
	}
	// The runtime catalog on the page follows them, for the slot asked.
	acme.postPage("/console/sessions/sess_p/permissions", url.Values{"mode": {"put"}, "enabled": {"true"}, "allow_set.narrator": {"true"}, "allow.narrator": {"echo_args"}})
	_, page := acme.get("/console/sessions?id=sess_p&slot=narrator")
	if !strings.Contains(page, "read_result is not on the allow list of slot narrator") {
		t.Errorf("the runtime tools do not show the allow list's refusal:\n%s", page)
	}
	globex := f.signIn(t, "globex")
	if resp, _ := globex.get("/console/sessions?id=sess_p"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("another account reads the session: %d", resp.StatusCode)
	}
	if st, _ := globex.postPage("/console/sessions/sess_p/permissions", url.Values{"mode": {"put"}}); st != http.StatusNotFound {
		t.Errorf("another account writes the permissions: %d", st)
	}
}

func TestPlaygroundRunsThroughThePipelineOnTheConsoleFace(t *testing.T) {
	f := newFixture(t, console.Options{})
	acme := f.signIn(t, "acme")
	if st := f.rest(t, "acme", http.MethodPost, "/sessions", map[string]string{"id": "sess_play"}, nil); st != http.StatusCreated {
		t.Fatalf("session: %d", st)
	}
	_, page := acme.get("/console/playground?session=sess_play&tool=echo_args")
	for _, want := range []string{`name="arg.text"`, `type="number" step="1"`, `type="number" step="any"`, `<option value="&#34;a&#34;"`, `<textarea id="arg-5" name="arg.list"`, `<abbr title="required">`} {
		if !strings.Contains(page, want) {
			t.Errorf("the form lacks %s:\n%s", want, page)
		}
	}
	runs := []struct {
		name   string
		form   url.Values
		status int
		says   string
	}{
		{"every kind of field", url.Values{"arg.text": {hostile}, "arg.n": {"3"}, "arg.x": {"1.5"}, "arg.flag": {"true"}, "arg.mode": {`"b"`}, "arg.list": {`["p","q"]`}},
			http.StatusOK, "success"},
		{"the pipeline's validation error", url.Values{"arg.text": {"t"}, "arg.n": {"11"}}, http.StatusUnprocessableEntity, "invalid_arguments"},
		{"a number that is no number goes to the pipeline as text", url.Values{"arg.text": {"t"}, "arg.x": {"1e"}}, http.StatusUnprocessableEntity, "invalid_arguments"},
		{"a JSON field that is not JSON is not run", url.Values{"arg.text": {"t"}, "arg.list": {"[" + hostile}}, http.StatusBadRequest, "Not run: list: not JSON"},
		{"raw JSON replaces the fields", url.Values{"arg.text": {"ignored"}, "raw_args": {`{"text":"raw"}`}}, http.StatusOK, "success"},
		{"raw JSON that is not an object is the pipeline's to refuse", url.Values{"raw_args": {`[1,2]`}}, http.StatusUnprocessableEntity, "invalid_arguments"},
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			r.form.Set("session", "sess_play")
			r.form.Set("tool", "echo_args")
			st, page := acme.postPage("/console/playground", r.form)
			if st != r.status || !strings.Contains(page, r.says) {
				t.Errorf("%d, want %d saying %q:\n%s", st, r.status, r.says, page)
			}
			if strings.Contains(page, "<img src=x") || strings.Contains(page, "<script>alert") {
				t.Error("hostile arguments became markup")
			}
		})
	}
	recs, _, err := f.exec.Journal().Store().List(context.Background(), journal.Query{AccountID: "acme", SessionID: "sess_play", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 5 {
		t.Fatalf("%d records, want the 5 runs that reached the pipeline", len(recs))
	}
	for _, rec := range recs {
		if rec.Face != console.Face || rec.KeyID != f.keyID["acme"] {
			t.Errorf("record %s: face %q key %q, want the console face and acme's key", rec.ID, rec.Face, rec.KeyID)
		}
	}

	// Another account cannot run in acme's session; a key without the mcp
	// scope is refused by the pipeline as on /mcp.
	if st, _ := f.signIn(t, "globex").postPage("/console/playground", url.Values{"session": {"sess_play"}, "tool": {"echo_args"}, "arg.text": {"x"}}); st != http.StatusNotFound {
		t.Errorf("another account's run: %d, want 404", st)
	}
	_, secret, err := f.keys.CreateKey(context.Background(), "acme", "tools only", []string{keys.ScopeTools}, keys.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	f.secret["acme-tools"] = secret
	st, page := f.signIn(t, "acme-tools").postPage("/console/playground", url.Values{"session": {"sess_play"}, "tool": {"echo_args"}, "arg.text": {"x"}})
	if st != http.StatusUnprocessableEntity || !strings.Contains(page, "scope_missing") {
		t.Errorf("a key without the mcp scope: %d\n%s", st, page)
	}
}

// TestNewFormsNeedTheTokenAndTheOrigin: every post of the new pages is
// refused without the session's CSRF token or from another site, and
// changes nothing.
func TestNewFormsNeedTheTokenAndTheOrigin(t *testing.T) {
	f := newFixture(t, console.Options{})
	if st := f.rest(t, "acme", http.MethodPost, "/sessions", map[string]string{"id": "sess_x"}, nil); st != http.StatusCreated {
		t.Fatalf("session: %d", st)
	}
	b := f.signIn(t, "acme")
	_, page := b.get("/console/overview")
	token := csrfOf(t, page)
	for _, post := range []struct {
		path string
		form url.Values
	}{
		{"/console/tool-definitions", url.Values{"name": {"forged"}, "side_effect_level": {"none"}}},
		{"/console/sessions", url.Values{"new_id": {"sess_forged"}}},
		{"/console/sessions/sess_x/permissions", url.Values{"mode": {"put"}}},
		{"/console/playground", url.Values{"session": {"sess_x"}, "tool": {"echo_args"}, "arg.text": {"x"}}},
		{"/console/mcp-servers/any", url.Values{"action": {"override"}, "tool": {"echo"}}},
	} {
		for _, tc := range []struct {
			name   string
			token  string
			header map[string]string
		}{
			{"no token", "", nil},
			{"cross-site", token, map[string]string{"Sec-Fetch-Site": "cross-site"}},
			{"foreign origin", token, map[string]string{"Origin": "https://evil.example"}},
		} {
			form := url.Values{}
			for k, v := range post.form {
				form[k] = v
			}
			if tc.token != "" {
				form.Set("csrf", tc.token)
			}
			if resp := b.post(post.path, form, tc.header); resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s, %s: %d, want 403", post.path, tc.name, resp.StatusCode)
			}
		}
	}
	var defs struct {
		Data []json.RawMessage `json:"data"`
	}
	f.rest(t, "acme", http.MethodGet, "/tools/definitions", nil, &defs)
	recs, _, _ := f.exec.Journal().Store().List(context.Background(), journal.Query{AccountID: "acme", SessionID: "sess_x", Limit: 10})
	if len(defs.Data) != 0 || len(recs) != 0 || f.rest(t, "acme", http.MethodGet, "/sessions/sess_forged", nil, nil) != http.StatusNotFound {
		t.Errorf("a refused post changed something: %d definitions, %d runs", len(defs.Data), len(recs))
	}
	var perms struct {
		Data struct {
			AllowIrreversible bool `json:"allow_irreversible"`
		} `json:"data"`
	}
	if f.rest(t, "acme", http.MethodGet, "/sessions/sess_x/tool-permissions", nil, &perms); !perms.Data.AllowIrreversible {
		t.Error("a refused PUT replaced the permissions")
	}
}

// TestScriptHandlersFollowTheServersSwitch: with
// ENABLE_UNSAFE_SCRIPT_HANDLER on, the page creates and enables a script
// definition; off, REST refuses both, and the page says REST's words.
func TestScriptHandlersFollowTheServersSwitch(t *testing.T) {
	script := url.Values{"name": {"scripted"}, "handler_type": {"script"}, "script": {"return args"}, "side_effect_level": {"none"}, "enabled": {"true"}}
	for _, tc := range []struct {
		name    string
		scripts bool
		status  int
		says    string
	}{
		{"on", true, http.StatusCreated, "Created scripted"},
		{"off", false, http.StatusForbidden, "tool_script_handler_disabled: script handlers are disabled on this server (ENABLE_UNSAFE_SCRIPT_HANDLER is not true)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixtureScripts(t, console.Options{}, tc.scripts)
			st, page := f.signIn(t, "acme").postPage("/console/tool-definitions", script)
			if st != tc.status || !strings.Contains(page, tc.says) {
				t.Fatalf("%d, want %d saying %q:\n%s", st, tc.status, tc.says, page)
			}
			if tc.scripts && !strings.Contains(page, `value="script" checked`) && !strings.Contains(page, "<td>script</td>") {
				t.Errorf("the list does not show the script handler:\n%s", page)
			}
			if !tc.scripts && !strings.Contains(page, "return args") {
				t.Error("the refused form lost its script")
			}
		})
	}
}
