package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// replica is one `toolhost serve` subprocess (not --dev).
type replica struct {
	addr   string
	stderr *syncBuffer
	cmd    *exec.Cmd
}

func startReplica(t *testing.T, bin string, args ...string) *replica {
	t.Helper()
	r := &replica{stderr: &syncBuffer{}}
	r.cmd = exec.Command(bin, append([]string{"serve", "--test-tools", "--addr", "127.0.0.1:0"}, args...)...)
	r.cmd.Stderr = r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { r.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			r.cmd.Process.Kill()
		}
	})
	r.addr = waitForAddr(t, r.stderr)
	return r
}

var secretPattern = regexp.MustCompile(`th_[A-Za-z0-9_-]{32}`)

// bootstrapSecret reads the admin secret the first start printed.
func bootstrapSecret(t *testing.T, r *replica) string {
	t.Helper()
	s := secretPattern.FindString(r.stderr.String())
	if s == "" {
		t.Fatalf("no admin secret printed; stderr:\n%s", r.stderr.String())
	}
	return s
}

func apiJSON(t *testing.T, method, u, secret string, body any, want int) map[string]any {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, u, rd)
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode != want {
		t.Fatalf("%s %s = %d %v, want %d", method, u, resp.StatusCode, out, want)
	}
	return out
}

// createKey makes a key through the admin API and returns its secret.
func createKey(t *testing.T, r *replica, admin, account string, limits map[string]any) string {
	t.Helper()
	out := apiJSON(t, "POST", "http://"+r.addr+"/admin/keys", admin,
		map[string]any{"account": account, "name": "test", "scopes": []string{"mcp", "hosted"}, "limits": limits}, http.StatusCreated)
	s, _ := out["secret"].(string)
	if s == "" {
		t.Fatalf("no secret in %v", out)
	}
	return s
}

type bearerTransport struct{ secret string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.secret)
	return http.DefaultTransport.RoundTrip(r)
}

func mcpSession(t *testing.T, addr, secret string) *sdk.ClientSession {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "keys-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint: "http://" + addr + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{secret}},
	}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", addr, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func errorCode(res *sdk.CallToolResult) (string, float64) {
	e, _ := res.Meta["toolhost/error"].(map[string]any)
	code, _ := e["code"].(string)
	retry, _ := e["retry_after_ms"].(float64)
	return code, retry
}

// topologies: one SQLite server, and two servers sharing PostgreSQL and Redis.
func topologies(t *testing.T, bin string) map[string][]*replica {
	t.Helper()
	out := map[string][]*replica{"sqlite": {startReplica(t, bin, "--data", t.TempDir())}}
	pgURL, redisURL := os.Getenv("TOOLHOST_TEST_POSTGRES"), os.Getenv("TOOLHOST_TEST_REDIS")
	if pgURL != "" && redisURL != "" {
		u, err := url.Parse(pgURL)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("search_path", fmt.Sprintf("keys_e2e_%d", time.Now().UnixNano()))
		u.RawQuery = q.Encode()
		first := startReplica(t, bin, "--data", t.TempDir(), "--postgres", u.String(), "--redis", redisURL)
		// The second replica starts after the first has bootstrapped, so
		// exactly one admin key exists.
		second := startReplica(t, bin, "--data", t.TempDir(), "--postgres", u.String(), "--redis", redisURL)
		out["postgres-2-replicas"] = []*replica{first, second}
	} else {
		t.Log("TOOLHOST_TEST_POSTGRES or TOOLHOST_TEST_REDIS unset: the two-replica topology is not run here (CI sets both)")
	}
	return out
}

func TestKeyLimitsHoldAcrossReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("real serve processes per topology, PostgreSQL/Redis replicas, seconds; runs in make test")
	}
	bin := buildBinary(t)
	for name, reps := range topologies(t, bin) {
		t.Run(name, func(t *testing.T) {
			admin := bootstrapSecret(t, reps[0])

			t.Run("calls per minute", func(t *testing.T) {
				secret := createKey(t, reps[0], admin, "rpm", map[string]any{"calls_per_minute": 60})
				sessions := make([]*sdk.ClientSession, len(reps))
				for i, r := range reps {
					sessions[i] = mcpSession(t, r.addr, secret)
				}
				var mu sync.Mutex
				ok, refused := 0, 0
				var wg sync.WaitGroup
				for i := range 200 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						res, err := sessions[i%len(sessions)].CallTool(context.Background(), &sdk.CallToolParams{Name: "get_time"})
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						defer mu.Unlock()
						if !res.IsError {
							ok++
							return
						}
						code, retry := errorCode(res)
						if code != "rate_limited" || retry <= 0 {
							t.Errorf("refusal code %q retry %v: %+v", code, retry, res.Content)
						}
						refused++
					}()
				}
				wg.Wait()
				if ok != 60 || refused != 140 {
					t.Fatalf("executed %d, refused %d; want 60 and 140", ok, refused)
				}
			})

			t.Run("concurrent calls", func(t *testing.T) {
				secret := createKey(t, reps[0], admin, "conc", map[string]any{"concurrent_calls": 4})
				sessions := make([]*sdk.ClientSession, len(reps))
				for i, r := range reps {
					sessions[i] = mcpSession(t, r.addr, secret)
				}
				type span struct{ start, end float64 }
				var mu sync.Mutex
				var spans []span
				refusals := 0
				// ended counts the calls that came back; endedCh is closed
				// (and replaced) at each, for refused calls to try again then.
				ended, endedCh := 0, make(chan struct{})
				end := func() {
					mu.Lock()
					ended++
					close(endedCh)
					endedCh = make(chan struct{})
					mu.Unlock()
				}
				var wg sync.WaitGroup
				for i := range 16 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						defer end()
						for {
							mu.Lock()
							seen := ended
							mu.Unlock()
							res, err := sessions[i%len(sessions)].CallTool(context.Background(),
								&sdk.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 150}})
							if err != nil {
								t.Error(err)
								return
							}
							if res.IsError {
								code, retry := errorCode(res)
								if code != "concurrency_limited" || retry <= 0 {
									t.Errorf("refusal %q %v", code, retry)
									return
								}
								// Refused: four calls of the key were running.
								// Try again once one has come back, or at the
								// retry_after the refusal gave (a slot freed
								// after its answer), whichever is first.
								mu.Lock()
								refusals++
								again := ended != seen
								ch := endedCh
								mu.Unlock()
								if !again {
									select {
									case <-ch:
									case <-time.After(time.Duration(retry) * time.Millisecond):
									}
								}
								continue
							}
							b, _ := json.Marshal(res.StructuredContent)
							var out struct {
								Start float64 `json:"started_unix_us"`
								End   float64 `json:"ended_unix_us"`
							}
							json.Unmarshal(b, &out)
							mu.Lock()
							spans = append(spans, span{out.Start, out.End})
							mu.Unlock()
							return
						}
					}()
				}
				wg.Wait()
				// The most calls running at one instant, across every replica,
				// from the start and end each sleep call measured itself.
				type ev struct {
					at    float64
					delta int
				}
				var evs []ev
				for _, s := range spans {
					evs = append(evs, ev{s.start, 1}, ev{s.end, -1})
				}
				sort.Slice(evs, func(i, j int) bool {
					if evs[i].at != evs[j].at {
						return evs[i].at < evs[j].at
					}
					return evs[i].delta < evs[j].delta
				})
				peak, cur := 0, 0
				for _, e := range evs {
					cur += e.delta
					peak = max(peak, cur)
				}
				if len(spans) != 16 || peak > 4 || refusals == 0 {
					t.Fatalf("%d calls ran, peak %d in flight, %d refusals; want 16, ≤ 4, > 0", len(spans), peak, refusals)
				}
			})

			t.Run("accounts cannot read each other", func(t *testing.T) {
				a := createKey(t, reps[0], admin, "alpha", nil)
				b := createKey(t, reps[0], admin, "beta", nil)
				cs := mcpSession(t, reps[0].addr, a)
				res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "get_time"})
				if err != nil || res.IsError {
					t.Fatalf("call: %v %+v", err, res)
				}
				id, _ := res.Meta["toolhost/execution_id"].(string)
				last := reps[len(reps)-1]
				apiJSON(t, "GET", "http://"+last.addr+"/tool-executions/"+id, a, nil, http.StatusOK)
				apiJSON(t, "GET", "http://"+last.addr+"/tool-executions/"+id, b, nil, http.StatusNotFound)
				apiJSON(t, "GET", "http://"+last.addr+"/tool-executions/"+id+"/events", b, nil, http.StatusNotFound)
				list := apiJSON(t, "GET", "http://"+last.addr+"/tool-executions?session_id="+url.QueryEscape(cs.ID()), b, nil, http.StatusOK)
				if data, _ := list["data"].([]any); len(data) != 0 {
					t.Fatalf("account beta sees %d of alpha's records", len(data))
				}
			})
		})
	}
}

func TestAuthenticationErrors(t *testing.T) {
	bin := buildBinary(t)
	r := startReplica(t, bin, "--data", t.TempDir())
	admin := bootstrapSecret(t, r)
	if n := strings.Count(r.stderr.String(), admin); n != 1 {
		t.Fatalf("admin secret printed %d times", n)
	}
	mcpOnly := createKey(t, r, admin, "acme", nil)
	base := "http://" + r.addr
	tests := []struct {
		name, method, path, auth string
		want                     int
		wantCode                 string
	}{
		{"health is open", "GET", "/healthz", "", 200, ""},
		{"no key", "GET", "/tool-executions?session_id=x", "", 401, "missing_api_key"},
		{"wrong key", "GET", "/tool-executions?session_id=x", "Bearer th_" + strings.Repeat("x", 32), 401, "invalid_api_key"},
		{"not bearer", "GET", "/tool-executions?session_id=x", "Basic abc", 401, "missing_api_key"},
		{"mcp without key", "POST", "/mcp", "", 401, "missing_api_key"},
		{"admin route needs admin scope", "GET", "/admin/keys", "Bearer " + mcpOnly, 403, "insufficient_scope"},
		{"admin lists keys", "GET", "/admin/keys", "Bearer " + admin, 200, ""},
		{"metrics need a key", "GET", "/metrics", "", 401, "missing_api_key"},
		{"metrics need admin scope", "GET", "/metrics", "Bearer " + mcpOnly, 403, "insufficient_scope"},
		{"admin reads metrics", "GET", "/metrics", "Bearer " + admin, 200, ""},
		{"definitions writes need the tools scope", "POST", "/tools/definitions", "Bearer " + mcpOnly, 403, "insufficient_scope"},
		{"sessions writes need the tools scope", "POST", "/sessions", "Bearer " + mcpOnly, 403, "insufficient_scope"},
		{"any key reads definitions", "GET", "/tools/definitions", "Bearer " + mcpOnly, 200, ""},
		{"any key reads the builtins", "GET", "/tools/builtin", "Bearer " + mcpOnly, 200, ""},
		{"another account's session is 404", "GET", "/sessions/nope/tools/runtime", "Bearer " + mcpOnly, 404, "not_found"},
		{"a tools key creates a session", "POST", "/sessions", "Bearer " + admin, 201, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, base+tt.path, strings.NewReader(`{}`))
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Error struct{ Code string } `json:"error"`
			}
			json.NewDecoder(resp.Body).Decode(&body)
			if resp.StatusCode != tt.want || body.Error.Code != tt.wantCode {
				t.Fatalf("%d %q, want %d %q", resp.StatusCode, body.Error.Code, tt.want, tt.wantCode)
			}
			if tt.want == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("WWW-Authenticate = %q", resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
	// A revoked key is refused at once by this replica.
	out := apiJSON(t, "GET", base+"/admin/keys?account=acme", admin, nil, 200)
	id := out["data"].([]any)[0].(map[string]any)["id"].(string)
	apiJSON(t, "DELETE", base+"/admin/keys/"+id, admin, nil, 200)
	body := apiJSON(t, "GET", base+"/tool-executions?session_id=x", mcpOnly, nil, 401)
	if body["error"].(map[string]any)["code"] != "revoked_api_key" {
		t.Fatalf("revoked key: %v", body)
	}
}

// A key with a small monthly cap gets monthly_cap_reached from web_search
// once the cap is used, while get_time keeps working — and the usage
// survives a restart.
func TestMonthlyCapRefusesPaidToolsAndSurvivesRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("real serve processes started twice, seconds; runs in make test")
	}
	bin := buildBinary(t)
	srv, hits := searxngFixture(t)
	dir := t.TempDir()
	cfgPath := dir + "/config.json"
	cfg := `{"search": {"providers": [{"kind": "searxng", "base_url": "` + srv.URL + `"}]},
	         "keys": {"prices": {"web_search": 1}}}`
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	data := dir + "/data"
	r := startReplica(t, bin, "--data", data, "--config", cfgPath)
	admin := bootstrapSecret(t, r)
	secret := createKey(t, r, admin, "capped", map[string]any{"monthly_units_cap": 3})

	search := func(cs *sdk.ClientSession, i int) *sdk.CallToolResult {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "web_search",
			Arguments: map[string]any{"query": fmt.Sprintf("perovskite encapsulation stability %d", i), "count": 3}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	cs := mcpSession(t, r.addr, secret)
	for i := range 3 {
		if res := search(cs, i); res.IsError {
			t.Fatalf("search %d refused under the cap: %+v", i, res.Content)
		}
	}
	res := search(cs, 3)
	if code, _ := errorCode(res); !res.IsError || code != "monthly_cap_reached" {
		t.Fatalf("4th search: isError %v code %q", res.IsError, code)
	}
	// A repeat is answered from the cache: it costs nothing, so the cap
	// does not refuse it.
	if res := search(cs, 0); res.IsError {
		t.Fatalf("a cached answer was refused at the cap: %+v", res.Content)
	}
	if hits.Load() != 3 {
		t.Fatalf("the engine was reached %d times, want 3", hits.Load())
	}
	if res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "get_time"}); err != nil || res.IsError {
		t.Fatalf("free tool refused over the cap: %v %+v", err, res)
	}
	usage := apiJSON(t, "GET", "http://"+r.addr+"/admin/usage?account=capped", admin, nil, 200)
	if tot := usage["totals"].(map[string]any); tot["units"].(float64) != 3 || tot["calls"].(float64) != 4 {
		t.Fatalf("usage totals %v", tot)
	}

	// Restart on the same data: the month's usage is still there.
	r.cmd.Process.Signal(os.Interrupt)
	r.cmd.Wait()
	r2 := startReplica(t, bin, "--data", data, "--config", cfgPath)
	if secretPattern.MatchString(r2.stderr.String()) {
		t.Fatal("a second admin secret was printed on restart")
	}
	cs2 := mcpSession(t, r2.addr, secret)
	if res := search(cs2, 4); !res.IsError {
		t.Fatal("search allowed after restart: usage was lost")
	}
	if res, err := cs2.CallTool(context.Background(), &sdk.CallToolParams{Name: "get_time"}); err != nil || res.IsError {
		t.Fatalf("free tool after restart: %v %+v", err, res)
	}
}
