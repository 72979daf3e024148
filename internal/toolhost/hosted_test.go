package toolhost

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/config"
	"github.com/toolhost/toolhost/tools"
)

// hosted.routes errors are reported at start-up, naming the route.
func TestHostedRoutesConfigErrors(t *testing.T) {
	cases := []struct {
		name   string
		routes []config.Route
		want   string
	}{
		{"bad_protocol", []config.Route{{Name: "a", BaseURL: "http://127.0.0.1:1/v1", Protocol: "smoke"}}, `protocol "smoke"`},
		{"no_base_url", []config.Route{{Name: "a"}}, "base_url is required"},
		{"no_name", []config.Route{{BaseURL: "http://127.0.0.1:1/v1"}}, "name is required"},
		{"duplicate", []config.Route{{Name: "a", BaseURL: "http://127.0.0.1:1/v1"}, {Name: "a", BaseURL: "http://127.0.0.1:2/v1"}}, "defined twice"},
		{"bad_pattern", []config.Route{{Name: "a", BaseURL: "http://127.0.0.1:1/v1", Models: []string{"gpt-["}}}, "bad model pattern"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := &Options{Config: config.Default()}
			o.Config.Hosted.Routes = tc.routes
			_, _, err := hostedRoutes(o, nil, nil, nil, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// A route whose API key variable is not set does not stop the server (as a
// search provider's missing key does not): it is marked unavailable in
// /healthz, and a request for its model is told why, naming the variable.
func TestHostedRouteWithoutKeyIsUnavailable(t *testing.T) {
	// The environment cmd hands over has no such variable.
	o := &Options{Config: config.Default(), LookupEnv: func(string) (string, bool) { return "", false }}
	o.Config.Hosted.Routes = []config.Route{
		{Name: "nokey", BaseURL: "http://127.0.0.1:1/v1", APIKeyEnv: "TOOLHOST_TEST_NO_SUCH_KEY", Models: []string{"gpt-*"}, SupportsTools: true},
	}
	exec, err := tools.NewExecutor(tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	routes, health, err := hostedRoutes(o, exec, nil, nil, nil)
	if err != nil {
		t.Fatalf("a missing key must not be fatal: %v", err)
	}
	st, _ := json.Marshal(health())
	if !strings.Contains(string(st), `"state":"unavailable"`) || !strings.Contains(string(st), "TOOLHOST_TEST_NO_SUCH_KEY") {
		t.Fatalf("health = %s, want the route unavailable naming the variable", st)
	}
	for _, tc := range []struct{ model, want string }{
		{"gpt-4o", "route nokey is unavailable: environment variable TOOLHOST_TEST_NO_SUCH_KEY"},
		{"claude-x", "hosted.routes"},
	} {
		rec := httptest.NewRecorder()
		body := `{"model":"` + tc.model + `","messages":[{"role":"user","content":"hi"}]}`
		routes["POST /v1/chat/completions"].ServeHTTP(rec, httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body)))
		if rec.Code != 503 || !strings.Contains(rec.Body.String(), tc.want) {
			t.Fatalf("%s: %d %s, want 503 saying %q", tc.model, rec.Code, rec.Body.String(), tc.want)
		}
	}
}
