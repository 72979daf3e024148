// Command mcp-testserver serves the test MCP server of package testserver
// on a loopback address (streamable HTTP at /mcp) for the e2e suite:
// mcp-testserver -addr 127.0.0.1:0 prints "listening on http://ADDR/mcp".
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"

	"github.com/toolhost/toolhost/tools/mcpremote/testserver"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen `ADDRESS`")
	hostile := flag.Bool("hostile", false, "add the misbehaving tools")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", testserver.New(*hostile).Handler())
	fmt.Printf("listening on http://%s/mcp\n", ln.Addr())
	if err := http.Serve(ln, mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
