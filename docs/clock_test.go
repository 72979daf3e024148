package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Time is a dependency (docs/architecture.md, Tests): wherever the product
// computes an expiry, a deadline or an age it reads an injected clock (a
// `Now`, `Clock` or `now` func() time.Time whose nil default is time.Now),
// so issuing and checking read the same clock and a test's fake clock is
// the only one in play. TestWallClockReads keeps it so: a call of
// time.Now, time.Since or time.Until in a non-test file of the product is
// refused unless its function is listed here, with why it reads the wall
// clock. Naming time.Now as a clock's default is not a call.
var wallClockReads = map[string]string{
	// The default clock of code given one per handler.
	"server/admin/account.go nowOf": "the REST handlers' clock when they are given none",
	// zitadel/oidc stamps iat and expires_in on time.Now; the client's
	// ClockSkew shifts them onto the provider's clock.
	"server/oauth/client.go ClockSkew": "how far the wall clock is from the provider's",
	// x/oauth2 stamps a fetched token's Expiry on time.Now; onClock moves
	// it onto the gateway's clock.
	"tools/mcpremote/tokens.go onClock": "how far a fetched token's expiry is on the wall clock",

	// Durations between two readings of this process's monotonic clock
	// (latency, pacing, demand rates) and deadlines that timers and
	// contexts enforce: the runtime's timers could not follow a fake clock.
	"tools/pipeline.go normalize":                           "a call's deadline, a context deadline",
	"internal/store/jobs.go NextRetry":                      "river schedules a retry on the wall clock it reads itself",
	"tools/jobs.go jobPipeline":                             "a job attempt's deadline, a context deadline",
	"tools/jobwait.go WaitJob":                              "how long wait_job waits, a context deadline",
	"tools/record.go claim":                                 "a call's deadline, a context deadline",
	"tools/authorize.go Authorize":                          "the concurrency lease lasts until the call's deadline",
	"journal/spool.go put":                                  "how long a write has waited in the spool, paced by a timer",
	"journal/spool.go apply":                                "how long a write has waited in the spool, paced by a timer",
	"journal/spool.go ticker":                               "how long a write has waited in the spool, paced by a timer",
	"journal/barrier.go awaitReplicas":                      "how long the read barrier has waited for the replicas",
	"tools/mcpremote/gateway.go listChanged":                "re-listings spaced by a timer",
	"tools/mcpremote/retry.go left":                         "a call's deadline, a context deadline",
	"tools/mcpremote/retry.go fits":                         "a retry's wait against a context deadline",
	"server/conns.go Accept":                                "a write deadline on a refused connection",
	"server/conns.go connState":                             "which connection has been idle the longest",
	"server/conns.go bodyDeadline":                          "a read deadline on a connection",
	"tools/runcode/telemetry.go record":                     "a run's wait and run, for their spans and histograms",
	"server/telemetry.go traced":                            "a request's latency, for http.server.request.duration",
	"server/mcp/telemetry.go traced":                        "a request's latency, for mcp.server.operation.duration",
	"server/v1/loop/telemetry.go Call":                      "a model call's latency, for gen_ai.client.operation.duration",
	"sandbox/sandbox.go Run":                                "a run's progress",
	"sandbox/sandbox.go watch":                              "a run's progress",
	"sandbox/sandbox.go runDeadline":                        "a run's deadline, a context deadline",
	"sandbox/quickjs/eval.go softContext":                   "the interrupt's grace before a context deadline",
	"sandbox/pool.go ensure":                                "how long a runtime took to load, for the log",
	"sandbox/pool.go available":                             "how long a run waited for its runtime, against its context's deadline",
	"sandbox/pool.go run":                                   "how long an instance took to start",
	"sandbox/python.go newPythonEngine":                     "how long the snapshot took, for the log",
	"sandbox/python.go runOn":                               "a run's duration",
	"sandbox/pysnapshot.go takeSnapshot":                    "how long the snapshot took",
	"sandbox/javascript.go run":                             "a run's duration",
	"tools/runcode/runcode.go Call":                         "a run's progress",
	"tools/websearch/websearch.go Call":                     "the search's duration (took_ms)",
	"tools/websearch/hedge.go race":                         "a provider's latency",
	"tools/sleep/sleep.go Call":                             "the test tool reports how long it slept",
	"server/v1/loop/runner.go Run":                          "the upstream's and the tools' durations in a round; a run's wall-clock budget, a context deadline",
	"server/v1/loop/runner.go hostedRound":                  "the tools' duration in a round",
	"server/v1/loop/budget.go expired":                      "a run's wall-clock budget, a context deadline",
	"cmd/toolhost/main.go cmdServe":                         "how long the server ran, for the log",
	"tools/fetchpage/pdftext/internal/pdfeval/main.go best": "how long an evaluation took",

	// Times that say when something happened, compared with no clock.
	"server/v1/loop/roundlog.go record":                       "a round's log line",
	"server/v1/upstream/anthropic/response.go decodeResponse": "the created field of an OpenAI-shaped answer",
	"server/v1/upstream/anthropic/stream.go messageStart":     "the created field of an OpenAI-shaped answer",
	"internal/store/migrate.go record":                        "when a migration was applied",
	"internal/store/replicas.go Join":                         "when a replica joined",
	"internal/toolhost/store.go presetDefinitions":            "the config's presets are created when the server starts",
	"cmd/toolhost/mcpservers.go probeServer":                  "the probed server is registered now",
	"cmd/toolhost/mcpconfig.go writeBackup":                   "the backup file's name",
	"cmd/toolhost/jobsettings.go jobsLimits":                  "when the account's job limits changed, for the record",
	"cmd/toolhost/keys.go register":                           "this month, the default of --month",
}

// TestWallClockReads finds every call of time.Now, time.Since and
// time.Until in the product's non-test files and fails on one whose
// function is not in wallClockReads, and on an entry nothing matches.
func TestWallClockReads(t *testing.T) {
	listedTimeCalls(t, wallClockReads, "wallClockReads", isProduct,
		func(name string) bool { return !strings.HasSuffix(name, "_test.go") }, nil,
		func(rel string, c timeCall, key string) string {
			return fmt.Sprintf("%s:%d: %s calls time.%s: read the clock the code is given (an expiry, deadline or age must be computed on the clock that a test can set), or list %q in wallClockReads with why it reads the wall clock", rel, c.line, c.fn, c.name, key)
		}, "Now", "Since", "Until")
}

// listedTimeCalls walks the repository's Go files in the folders keepDir
// accepts and the files keepFile accepts, and fails on a call of one of
// the named functions of package time whose "file function" key is not in
// listed (saying why with refuse) unless skip accepts it, and on an entry
// of listed that no call matches.
func listedTimeCalls(t *testing.T, listed map[string]string, listName string, keepDir, keepFile func(name string) bool, skip func(timeCall) bool, refuse func(rel string, c timeCall, key string) string, names ...string) {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != ".." && !keepDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || !keepFile(d.Name()) {
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, "../"))
		calls, err := timeCalls(path, names...)
		if err != nil {
			return err
		}
		for _, c := range calls {
			if skip != nil && skip(c) {
				continue
			}
			key := rel + " " + c.fn
			if _, ok := listed[key]; !ok {
				t.Error(refuse(rel, c, key))
			}
			seen[key] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for key := range listed {
		if !seen[key] {
			t.Errorf("%s lists %q, which calls none of time.%s: drop it", listName, key, strings.Join(names, ", time."))
		}
	}
}

// isProduct says whether a folder holds product code: not the docs,
// benchmarks and e2e clients, test data, nor the helpers only tests use
// (journaltest, storetest, remotetest, testserver, mcp-testserver,
// fakeupstream).
func isProduct(dir string) bool {
	switch {
	case strings.HasPrefix(dir, "."), dir == "node_modules", dir == "testdata",
		dir == "docs", dir == "bench", dir == "e2e", dir == "fakeupstream", strings.Contains(dir, "test"):
		return false
	}
	return true
}

// timeCall is one call of a function of package time.
type timeCall struct {
	fn   string // the enclosing top-level function or method
	name string // Now, Since, Until, Sleep, ...
	line int
	// inBubble: the call is inside the function a synctest.Test call
	// runs, where time is the bubble's fake clock.
	inBubble bool
}

// timeCalls parses one file and returns its calls of the named functions
// of package time, under whatever name it imports "time".
func timeCalls(path string, names ...string) ([]timeCall, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	timeName, synctestName := "", ""
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		name := filepath.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		switch p {
		case "time":
			timeName = name
		case "testing/synctest":
			synctestName = name
		}
	}
	if timeName == "" {
		return nil, nil
	}
	var calls []timeCall
	for _, decl := range f.Decls {
		fn := "package-level"
		if fd, ok := decl.(*ast.FuncDecl); ok {
			fn = fd.Name.Name
		}
		// The extents of synctest.Test calls: a call inside one runs in
		// a bubble, on its fake clock.
		var bubbles []ast.Node
		ast.Inspect(decl, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			switch {
			case !ok:
			case x.Name == synctestName && synctestName != "" && sel.Sel.Name == "Test":
				bubbles = append(bubbles, call)
			case x.Name == timeName && slices.Contains(names, sel.Sel.Name):
				c := timeCall{fn: fn, name: sel.Sel.Name, line: fset.Position(call.Pos()).Line}
				for _, b := range bubbles {
					c.inBubble = c.inBubble || (b.Pos() <= call.Pos() && call.End() <= b.End())
				}
				calls = append(calls, c)
			}
			return true
		})
	}
	return calls, nil
}
