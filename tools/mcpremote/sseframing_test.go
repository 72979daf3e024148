package mcpremote_test

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/tools/mcpremote"
	"github.com/toolhost/toolhost/tools/mcpremote/testserver"
)

// framedWriter puts lines before each event of an event stream that an
// SSE client skips but a byte scan of the body could take for JSON.
type framedWriter struct {
	http.ResponseWriter
	lines string
}

func (w *framedWriter) Write(p []byte) (int, error) {
	if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		if _, err := w.ResponseWriter.Write([]byte(w.lines)); err != nil {
			return 0, err
		}
	}
	return w.ResponseWriter.Write(p)
}

func (w *framedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// A server whose event stream has a stray quote or brackets outside the
// JSON messages (in a comment, an id or an unknown field) gets the same
// verdicts on nesting as a plain one: the framing neither hides a message
// too deep (the call would be taken for lost) nor adds nesting.
func TestDeepRemoteResultsBehindHostileFraming(t *testing.T) {
	for name, lines := range map[string]string{
		"a quote in a comment":      ": \"\n",
		"a quote in an id":          "id: \"\r\n",
		"brackets in another field": "x-note: [[[[\"\n",
	} {
		t.Run(name, func(t *testing.T) {
			ts := testserver.New(true)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			mux := http.NewServeMux()
			h := ts.Handler()
			mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				h.ServeHTTP(&framedWriter{ResponseWriter: w, lines: lines}, r)
			}))
			srv := &http.Server{Handler: mux}
			go srv.Serve(ln)
			t.Cleanup(func() { srv.Close() })
			r := newRig(t, mcpremote.Options{})
			r.register("acct_a", "evil", "http://"+ln.Addr().String()+"/mcp", func(s *mcpremote.Server, _ *mcpremote.Secrets) { s.Timeout = 5 * time.Second })
			for _, tc := range deepCases {
				args, _ := json.Marshal(tc.args)
				before := ts.Calls("deep")
				if out := r.call("acct_a", "evil__deep", string(args)); out.Code != tc.code {
					t.Errorf("%s: code %q, want %q (%.200s)", tc.name, out.Code, tc.code, out.Text)
				}
				if n := ts.Calls("deep") - before; n != 1 {
					t.Errorf("%s: the call reached the server %d times, want 1", tc.name, n)
				}
			}
		})
	}
}
