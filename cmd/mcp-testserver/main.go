// Command mcp-testserver serves the test MCP server of package testserver
// on a loopback address (streamable HTTP at /mcp) for the e2e suite:
// mcp-testserver -addr 127.0.0.1:0 prints "listening on http://ADDR/mcp".
// GET /trace-contexts answers the trace context it was sent: the
// traceparent header of each request to /mcp that had one, and the
// _meta traceparent of each echo call, as JSON.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"

	"github.com/toolhost/toolhost/tools/mcpremote/testserver"
)

// traceContexts is what GET /trace-contexts answers.
type traceContexts struct {
	Headers  []string `json:"headers"`
	EchoMeta []string `json:"echo_meta"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen `ADDRESS`")
	hostile := flag.Bool("hostile", false, "add the misbehaving tools")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ts := testserver.New(*hostile)
	h := ts.Handler()
	var mu sync.Mutex
	headers := []string{}
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tp := r.Header.Get("Traceparent"); tp != "" {
			mu.Lock()
			headers = append(headers, tp)
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	mux.HandleFunc("GET /trace-contexts", func(w http.ResponseWriter, _ *http.Request) {
		out := traceContexts{EchoMeta: []string{}}
		mu.Lock()
		out.Headers = append([]string{}, headers...)
		mu.Unlock()
		for _, m := range ts.Metas("echo") {
			tp, _ := m["traceparent"].(string)
			out.EchoMeta = append(out.EchoMeta, tp)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
	fmt.Printf("listening on http://%s/mcp\n", ln.Addr())
	if err := http.Serve(ln, mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
