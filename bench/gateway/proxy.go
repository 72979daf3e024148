package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The bare proxy's tools: proxyTool forwards to echo upstream, bareTool
// answers at once (the bare server hop, beside toolhost's get_time).
const (
	proxyTool = "proxy_echo"
	bareTool  = "bare_noop"
)

// startProxy starts this program again as the bare proxy (-proxy-upstream)
// on a free loopback port and returns its /mcp URL: the floor of any hop
// built on the go-sdk, for scale beside toolhost's gateway.
func startProxy(ctx context.Context, upstream string) (string, func(), error) {
	addr, err := freeAddr()
	if err != nil {
		return "", nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	cmd := exec.CommandContext(ctx, self, "-proxy-listen", addr, "-proxy-upstream", upstream)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	url := "http://" + addr + "/mcp"
	if err := waitFor(ctx, func() error {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	}); err != nil {
		stop()
		return "", nil, fmt.Errorf("bare proxy: %w", err)
	}
	return url, stop, nil
}

// serveProxy is the bare proxy: a go-sdk streamable server whose one tool
// calls echo upstream on one go-sdk client session — no pipeline, no
// validation, no journal — and a tool that answers at once.
func serveProxy(ctx context.Context, listen, upstream string) error {
	up, err := connect(ctx, upstream)
	if err != nil {
		return err
	}
	defer up.Close()
	srv := sdk.NewServer(&sdk.Implementation{Name: "bare-proxy", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: proxyTool, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return up.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: req.Params.Arguments})
		})
	srv.AddTool(&sdk.Tool{Name: bareTool, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
		})
	hs := &http.Server{Addr: listen, Handler: sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)}
	return hs.ListenAndServe()
}
