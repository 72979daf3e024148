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
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// server is a server under test, started by launch.
type server struct {
	cmd  *exec.Cmd
	base string // http://ADDR
	hc   *http.Client
	stop func() // ends the server and removes its temporary folder
}

// launch starts t on a free loopback port with a temporary folder of its
// own, and returns once it answers its tool and has finished its own
// start-up work. conns sizes the HTTP client's connection pool.
func launch(ctx context.Context, t target, conns int) (*server, error) {
	tmp, err := os.MkdirTemp("", "mcpload-")
	if err != nil {
		return nil, err
	}
	addr, err := freeLoopbackAddr()
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	sctx, stopServer := context.WithCancel(ctx)
	cmd, err := t.start(sctx, addr, tmp)
	if err != nil {
		stopServer()
		os.RemoveAll(tmp)
		return nil, err
	}
	srv := &server{cmd: cmd, base: "http://" + addr, hc: loopbackClient(conns), stop: func() {
		stopServer()
		_ = cmd.Wait() // ended by the context: the exit status is ours
		os.RemoveAll(tmp)
	}}
	if err := waitReady(ctx, srv.hc, srv.base+"/mcp", t, filepath.Join(tmp, "server.log")); err != nil {
		srv.stop()
		return nil, err
	}
	if err := waitIdle(ctx, cmd.Process.Pid); err != nil {
		srv.stop()
		return nil, err
	}
	return srv, nil
}

// waitReady polls until an MCP session can be opened and the measured tool
// answers, or the server has had 30 s.
func waitReady(ctx context.Context, hc *http.Client, endpoint string, t target, logFile string) error {
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		if err := ctx.Err(); err != nil {
			return err
		}
		cs, err := connect(ctx, hc, endpoint, "mcpload-ready")
		if err == nil {
			var res *mcp.CallToolResult
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: t.tool, Arguments: t.args})
			_ = cs.Close()
			if err == nil && res.IsError {
				err = fmt.Errorf("tool %s answered isError: %v", t.tool, res.Content)
			}
			if err == nil {
				return nil
			}
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	logTail, _ := os.ReadFile(logFile)
	if len(logTail) > 4000 {
		logTail = logTail[len(logTail)-4000:]
	}
	return fmt.Errorf("not ready after 30 s: %w\nserver log:\n%s", last, logTail)
}

// waitIdle waits until the server has finished its own start-up work (toolhost
// compiles the WebAssembly runtimes of run_code in the background), seen as
// its process using under 5% of a core over one second, so that every server
// is measured in its steady state. It gives up waiting after three minutes
// and measures anyway, saying so.
func waitIdle(ctx context.Context, pid int) error {
	const tick = time.Second
	deadline := time.Now().Add(3 * time.Minute)
	prev, err := cpuTime(pid)
	if err != nil {
		return err
	}
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(tick):
		}
		cur, err := cpuTime(pid)
		if err != nil {
			return err
		}
		if cur-prev < tick/20 {
			return nil
		}
		prev = cur
	}
	fmt.Fprintf(os.Stderr, "mcpload: pid %d still busy after 3 minutes; measuring anyway\n", pid)
	return nil
}

// cpuTime is the user+system CPU time of a process so far, from
// /proc/PID/stat (fields 14 and 15, in clock ticks of 1/100 s).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields after it are
	// counted from its closing parenthesis.
	rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// loopbackClient is an HTTP client that never uses a proxy and refuses to
// dial anything but a loopback address.
func loopbackClient(conns int) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Client{Transport: &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
				return nil, fmt.Errorf("mcpload dials loopback only, not %s", addr)
			}
			return dialer.DialContext(ctx, network, addr)
		},
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}}
}

func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// command builds a server process that logs into tmp/server.log and is sent
// SIGTERM (then killed after 5 s) when ctx ends.
func command(ctx context.Context, tmp, name string, args ...string) (*exec.Cmd, error) {
	logf, err := os.Create(filepath.Join(tmp, "server.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	return cmd, nil
}
