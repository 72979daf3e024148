package docs

import (
	"fmt"
	"strings"
	"testing"
)

// Tests order events with testing/synctest, channels or a fake clock, never
// with a sleep (docs/architecture.md, Tests): a sleep that "gives the
// goroutine a moment" holds on an idle machine and fails on a busy one.
// TestNoSleepsInTests keeps it so: a call of time.Sleep in a _test.go file
// is refused unless it is inside a synctest.Test bubble, where it steps the
// bubble's fake clock and no real time passes, or its function is listed
// here with why it is not ordering events: a real process's wall clock that
// has to move on, which no test can set, or a bounded poll of another
// process's state.
var testSleeps = map[string]string{
	// A real toolhost serve and a real OAuth client share only the wall
	// clock: the two-second access token has to expire on it.
	"cmd/toolhost/oauth_test.go TestOAuthGoSDKClientAuthorizesRefreshesAndIsRevoked": "a real process's token lifetime passing on the wall clock",

	// A real toolhost serve's state read over its REST API, which offers no
	// event to wait on: a bounded poll of a condition, not a wait for time
	// to pass (the assertion is on the state, not on when it was reached).
	"cmd/toolhost/cancel_test.go finishedRunCode":                 "a bounded poll of another process's journal",
	"cmd/toolhost/journal_test.go journalWaitFor":                 "a bounded poll of another process's journal",
	"cmd/toolhost/jobs_test.go waitRecord":                        "a bounded poll of another process's journal (a job rescued by river's leader)",
	"cmd/toolhost/main_test.go TestHealthzReportsRunCodeRuntimes": "a bounded poll of another process's /healthz",
}

// TestNoSleepsInTests finds every call of time.Sleep in the repository's
// tests and checks it against testSleeps.
func TestNoSleepsInTests(t *testing.T) {
	listedTimeCalls(t, testSleeps, "testSleeps",
		func(name string) bool {
			return !strings.HasPrefix(name, ".") && name != "node_modules" && name != "testdata"
		},
		func(name string) bool { return strings.HasSuffix(name, "_test.go") },
		func(c timeCall) bool { return c.inBubble },
		func(rel string, c timeCall, key string) string {
			return fmt.Sprintf("%s:%d: %s sleeps: wait for the event itself (a channel, synctest.Wait, a fake clock, a Close that waits), or list %q in testSleeps with why it does not order events", rel, c.line, c.fn, key)
		}, "Sleep")
}
