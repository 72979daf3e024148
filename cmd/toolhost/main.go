// Command toolhost serves web_search, fetch_page, run_code and the builtin
// tools over MCP (streamable HTTP or stdio) and as hosted tools on /v1, and
// runs single calls from the shell. It is the only package that reads flags,
// the environment and the config file.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/google/uuid"

	"toolhost/catalog"
	"toolhost/sandbox"
	"toolhost/server"
	mcpface "toolhost/server/mcp"
	"toolhost/tools"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

const usage = `toolhost — tools for language models over MCP and /v1

Usage:
  toolhost serve   [--addr 127.0.0.1:8080] [--data ./data] [--config FILE] [--dev]
  toolhost stdio   [--data ./data] [--config FILE] [--lang en|zh]
  toolhost call    [--data ./data] [--config FILE] TOOL 'JSON'
  toolhost journal [--data ./data | --postgres URL] [--session-id S] [--floor-id F] [--run-id R]
                   [--tool-name T] [--status S] [--limit 20] [--json]
  toolhost keys    create|list|revoke|set-limits|usage ... (toolhost keys for details)
  toolhost version

Every flag can also be set as TOOLHOST_<FLAG> in the environment.
`

// exit codes of toolhost call.
const (
	exitOK        = 0
	exitToolError = 1
	exitUsage     = 2
)

func main() {
	// Every call takes two UUIDs (its call id and its execution id) on a
	// goroutine the MCP SDK has just started; reading crypto/rand there grows
	// the new goroutine's stack each time, which cost about 9 µs per call
	// under load. The pool reads 256 random bytes at once and hands them out
	// under a mutex: still crypto/rand, one stack growth per 16 UUIDs.
	// It must be enabled before any UUID is made, hence here.
	uuid.EnableRandPool()
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	var err error
	switch args[0] {
	case "serve":
		err = cmdServe(ctx, args[1:], stderr)
	case "stdio":
		err = cmdStdio(ctx, args[1:], stderr)
	case "call":
		return cmdCall(ctx, args[1:], stdout, stderr)
	case "keys":
		return cmdKeys(ctx, args[1:], stdout, stderr)
	case "journal":
		return cmdJournal(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintf(stdout, "toolhost %s\n", version)
		return exitOK
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "toolhost: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "toolhost: %v\n", err)
			return exitUsage
		}
		fmt.Fprintf(stderr, "toolhost: %v\n", err)
		return 1
	}
	return exitOK
}

type usageError struct{ error }

// common holds the flags every command that runs tools shares.
type common struct {
	data      string
	config    string
	testTools bool
	cfg       Config
	// postgres, when set, holds the journal in PostgreSQL instead of the
	// SQLite file under data (store.go).
	postgres string
	// runtimes is the folder holding python.wasm and quickjs.wasm (run_code).
	runtimes string
	// redis, when set, holds the per-key limit state shared by replicas
	// (keys.go).
	redis string
	// authorizer admits calls under API-key limits (serve only; keys.go).
	authorizer tools.Authorizer
	// sandbox is run_code's sandbox once toolset built it; /healthz reports
	// its runtimes and warm pools.
	sandbox *sandbox.Sandbox
	// preload: start loading run_code's runtimes as soon as the sandbox
	// exists (servers), not on the first call (one-shot commands).
	preload bool
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.data, "data", "./data", "directory for local state (SQLite file, wasm cache, runtimes)")
	fs.StringVar(&c.config, "config", "", "optional JSON config file (see README)")
	fs.BoolVar(&c.testTools, "test-tools", false, "also publish the test-only sleep tool (tests and load runs only)")
	fs.StringVar(&c.runtimes, "runtimes", "", "folder holding python.wasm and quickjs.wasm for run_code (default ./runtimes, else <data>/runtimes)")
	fs.StringVar(&c.redis, "redis", "", "Redis URL for per-key limit state shared by replicas (default: in process memory)")
	fs.StringVar(&c.postgres, "postgres", "", "PostgreSQL URL for the journal instead of the SQLite file under --data (search_path=SCHEMA selects a schema)")
}

func parseFlags(fs *flag.FlagSet, args []string, c *common) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if err := envDefaults(fs); err != nil {
		return usageError{err}
	}
	cfg, err := loadConfig(c.config)
	if err != nil {
		return usageError{err}
	}
	c.cfg = cfg
	return nil
}

func newExecutor(c *common, logger *slog.Logger) (*tools.Executor, func(), error) {
	ts, cleanup, err := toolset(c, logger)
	if err != nil {
		return nil, nil, err
	}
	jr, closeJournal, err := openJournal(c, logger)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	toolsCleanup := cleanup
	cleanup = func() { toolsCleanup(); closeJournal() }
	exec, err := tools.NewExecutor(tools.Options{
		DefaultTimeout:     c.cfg.Tools.DefaultTimeout.D(),
		MaxResultBytes:     c.cfg.Tools.MaxResultBytes,
		JournalArgsBytes:   c.cfg.Journal.MaxArgsBytes,
		JournalResultBytes: c.cfg.Journal.MaxResultBytes,
		Logger:             logger,
		Journal:            jr,
		Authorizer:         c.authorizer,
	}, ts...)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return exec, cleanup, nil
}

func cmdServe(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var c common
	c.register(fs)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	dev := fs.Bool("dev", false, "development mode: no authentication; only on a loopback address")
	stateless := fs.Bool("stateless", false, "MCP stateless mode for replicas behind a load balancer (no sessions, no server-initiated notifications outside a request)")
	if err := parseFlags(fs, args, &c); err != nil {
		return err
	}
	if *dev && !isLoopback(*addr) {
		return usageError{fmt.Errorf("--dev turns authentication off, so it is only allowed on a loopback address (127.0.0.1, ::1 or localhost), not %q", *addr)}
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	tuneGC(logger)
	ks, closeKeys, err := setupKeys(ctx, &c, *dev, logger, stderr)
	if err != nil {
		return err
	}
	defer closeKeys()
	c.authorizer = tools.KeysAuthorizer(ks)
	c.preload = true // compile run_code's runtimes and fill the pools now
	exec, cleanup, err := newExecutor(&c, logger)
	if err != nil {
		return err
	}
	defer cleanup()

	mcpSrv := mcpface.New(exec, mcpface.Options{
		Identify:       mcpCaller,
		Version:        version,
		Lang:           catalog.English,
		Stateless:      *stateless || c.cfg.MCP.Stateless,
		JSONResponse:   c.cfg.MCP.JSONResponse,
		SessionTimeout: c.cfg.MCP.SessionTimeout.D(),
		Limits: mcpface.Limits{
			MaxBodyBytes: c.cfg.MCP.MaxBodyBytes, MaxClientInfoBytes: c.cfg.MCP.MaxClientInfoBytes,
			SessionsPerKey: c.cfg.MCP.SessionsPerKey, Sessions: c.cfg.MCP.Sessions,
		},
		KeyOf: func(r *http.Request) string {
			if id := server.IdentityFrom(r.Context()); id != nil {
				return id.KeyID
			}
			return ""
		},
		Logger: logger,
	})
	// routes: every extra route of the HTTP server (/v1 here; others add
	// theirs to the same map).
	routes, err := hostedRoutes(&c, exec, logger)
	if err != nil {
		return err
	}
	routes = withJournalRoutes(routes, exec)
	for pattern, h := range keyRoutes(ks) {
		routes[pattern] = h
	}
	for pattern, h := range metricsRoutes(c.sandbox) {
		routes[pattern] = h
	}
	routes = secureRoutes(routes, ks, *dev)
	srv := server.New(server.Options{
		Addr:            *addr,
		Version:         version,
		MCP:             mcpHandler(mcpSrv.Handler(), ks, *dev),
		Routes:          routes,
		ShutdownTimeout: c.cfg.ShutdownTimeout.D(),
		Limits:          c.cfg.Server.limits(),
		Logger:          logger,
		Health: func() map[string]any {
			return map[string]any{"run_code": c.sandbox.Status()}
		},
	})
	if n, err := server.RaiseFileLimit(); err != nil {
		logger.Warn("cannot raise the open-file limit", "err", err)
	} else {
		logger.Info("open-file limit", "nofile", n)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger.Info("toolhost serving", "addr", ln.Addr().String(), "version", version, "dev", *dev, "tools", len(exec.Catalog().List()))
	return srv.Serve(ctx, ln)
}

func cmdStdio(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("stdio", flag.ContinueOnError)
	var c common
	c.register(fs)
	lang := fs.String("lang", "en", "language of tool descriptions: en or zh")
	if err := parseFlags(fs, args, &c); err != nil {
		return err
	}
	if *lang != "en" && *lang != "zh" {
		return usageError{fmt.Errorf("--lang must be en or zh, not %q", *lang)}
	}
	// stdout carries the protocol; every log line goes to stderr.
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// A client launches this process to use it: load run_code's runtimes
	// while it initializes, not on its first call.
	c.preload = true
	exec, cleanup, err := newExecutor(&c, logger)
	if err != nil {
		return err
	}
	defer cleanup()
	srv := mcpface.New(exec, mcpface.Options{Version: version, Lang: catalog.Lang(*lang), Logger: logger})
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := srv.RunStdio(ctx); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

func cmdCall(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	var c common
	c.register(fs)
	lang := fs.String("lang", "en", "language of messages: en or zh")
	idem := fs.String("idempotency-key", "", "idempotency key for this call")
	if err := parseFlags(fs, args, &c); err != nil {
		fmt.Fprintf(stderr, "toolhost call: %v\n", err)
		return exitUsage
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fmt.Fprintf(stderr, "toolhost call: want TOOL and optionally 'JSON' arguments, got %d words\n", fs.NArg())
		return exitUsage
	}
	argJSON := "{}"
	if fs.NArg() == 2 {
		argJSON = fs.Arg(1)
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// One call: pre-starting run_code's warm pools would only compete
	// with it for the CPU, and the sandbox loads nothing unless the call
	// is run_code (and then only its language's runtime).
	c.cfg.Sandbox.PythonPool, c.cfg.Sandbox.JavaScriptPool = -1, -1
	exec, cleanup, err := newExecutor(&c, logger)
	if err != nil {
		fmt.Fprintf(stderr, "toolhost call: %v\n", err)
		return exitUsage
	}
	defer cleanup()
	if _, ok := exec.Catalog().Lookup(fs.Arg(0)); !ok {
		names := []string{}
		for _, s := range exec.Catalog().List() {
			names = append(names, s.Name)
		}
		fmt.Fprintf(stderr, "toolhost call: unknown tool %q; available: %v\n", fs.Arg(0), names)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	out, err := exec.Execute(ctx, tools.Proposal{
		Tool:           fs.Arg(0),
		Args:           json.RawMessage(argJSON),
		CallID:         "cli",
		Caller:         tools.Caller{Slot: "cli"},
		IdempotencyKey: *idem,
		Lang:           catalog.Lang(*lang),
		Progress: func(p, total float64, msg string) {
			fmt.Fprintf(stderr, "progress %g/%g %s\n", p, total, msg)
		},
	})
	if err != nil {
		fmt.Fprintf(stderr, "toolhost call: %v\n", err)
		return exitToolError
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(callOutput(out))
	if out.IsError {
		return exitToolError
	}
	return exitOK
}

// callOutput is what toolhost call prints: the MCP-shaped result plus the
// pipeline's own fields.
func callOutput(out *tools.Outcome) map[string]any {
	m := map[string]any{
		"execution_id": out.ExecutionID,
		"tool":         out.Tool,
		"status":       out.Status,
		"isError":      out.IsError,
		"content":      []map[string]string{{"type": "text", "text": out.Text}},
		"duration_ms":  out.Duration.Milliseconds(),
	}
	if out.Version != "" {
		m["version"] = out.Version
	}
	if len(out.Structured) > 0 {
		m["structuredContent"] = json.RawMessage(out.Structured)
	}
	if out.IsError {
		m["error"] = map[string]any{"code": out.Code, "message": out.Message}
	}
	if out.Truncated {
		m["truncated"] = true
	}
	if out.Units > 0 {
		m["units"] = out.Units
	}
	return m
}

// tuneGC trades memory for CPU in the server: every tools/call allocates
// short-lived JSON (the MCP SDK decodes each message with a fresh decoder),
// and at Go's default GOGC=100 the collector took about a quarter of the CPU
// under load while the live heap stays a few tens of MiB. GOGC=400 keeps
// the heap small in absolute terms. An explicit GOGC in the environment wins.
func tuneGC(logger *slog.Logger) {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	debug.SetGCPercent(400)
	logger.Debug("GOGC set to 400 for serve")
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
