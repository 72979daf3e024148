// Command toolhost serves web_search, fetch_page, run_code and the builtin
// tools over MCP (streamable HTTP or stdio) and as hosted tools on /v1, and
// runs single calls from the shell. It is the only package that reads flags
// and the environment, and the only caller of config.Load; it hands their
// values to internal/toolhost, which assembles the app from them.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/config"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/telemetry"
	"github.com/toolhost/toolhost/internal/toolhost"
	"github.com/toolhost/toolhost/internal/wire"
	"github.com/toolhost/toolhost/server"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/runcode"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// Exit codes.
const (
	exitOK        = 0
	exitToolError = 1 // the tool answered with an error (call); any other failure
	exitUsage     = 2 // the command line or the config file is wrong
	exitStartup   = 3 // toolhost could not start what the command needs (store, runtimes)
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
	ctx = withCLI(ctx, &cliContext{stdout: stdout, stderr: stderr})
	if len(args) == 0 {
		printUsage(ctx, stderr)
		return exitUsage
	}
	switch args[0] {
	case "--help", "-h", "-help":
		printUsage(ctx, stdout)
		return exitOK
	case "--version", "-v":
		args[0] = "version"
	}
	c, ok := findCommand(args[0])
	if !ok {
		fmt.Fprintf(stderr, "toolhost: unknown command %q\n\n", args[0])
		printUsage(ctx, stderr)
		return exitUsage
	}
	return c.run(ctx, args[1:], stdin, stdout, stderr)
}

type usageError struct{ error }

// common holds the flags every command that runs tools shares.
type common struct {
	data      string
	config    string
	testTools bool
	cfg       config.Config
	// postgres, when set, holds the journal in PostgreSQL instead of the
	// SQLite file under data (toolhost.OpenStore).
	postgres string
	// runtimes is the folder holding python.wasm and quickjs.wasm (run_code).
	runtimes string
	// tel is OpenTelemetry's settings, from the OTEL_* variables.
	tel telemetry.Settings
}

// register defines the flags of the commands that run tools (serve, stdio,
// call).
func (c *common) register(fs *flag.FlagSet) {
	c.registerStore(fs)
	fs.BoolVar(&c.testTools, "test-tools", false, "also publish the test-only sleep tools (tests and load runs only)")
	fs.StringVar(&c.runtimes, "runtimes", "", "`DIR` holding run_code's runtimes (python.wasm, quickjs.wasm); default: searched next to the binary, in <data>/runtimes, the user cache and ./runtimes")
	fs.String("redis", "", "Redis `URL` the replicas share: per-key limit state and the web tools' caches (default: limits in process memory); overrides keys.redis")
}

// registerStore defines the flags that locate the store and the config.
func (c *common) registerStore(fs *flag.FlagSet) {
	fs.StringVar(&c.data, "data", "./data", "`DIR` for local state: the SQLite journal, its spool, the wasm compilation cache, the search cache")
	fs.StringVar(&c.config, "config", "", "optional JSON config `FILE` (docs/configuration.md)")
	fs.StringVar(&c.postgres, "postgres", "", "PostgreSQL `URL` for the journal and keys instead of the SQLite file under --data (search_path=SCHEMA selects a schema)")
}

// options are what toolhost.Open builds the app from: the config, the
// flags and the environment's values (only cmd reads them).
func (c *common) options(logger *slog.Logger) toolhost.Options {
	return toolhost.Options{
		Config:              c.cfg,
		Data:                c.data,
		Postgres:            c.postgres,
		RuntimeDirs:         runtimeDirs(c),
		TestTools:           c.testTools,
		Version:             version,
		Logger:              logger,
		LookupEnv:           os.LookupEnv,
		UnsafeScriptHandler: os.Getenv("ENABLE_UNSAFE_SCRIPT_HANDLER") == "true",
		SecretKey:           os.Getenv("TOOLHOST_SECRET_KEY"),
		PreviousSecretKeys:  os.Getenv("TOOLHOST_SECRET_KEY_PREVIOUS"),
		Telemetry:           c.tel,
	}
}

// openStore opens the store the flags name for `toolhost cmd`, or says on
// stderr why it could not (false: the command exits exitStartup).
func (c *common) openStore(ctx context.Context, cmd string, stderr io.Writer) (*store.DB, bool) {
	db, err := toolhost.OpenStore(ctx, c.options(nil))
	if err != nil {
		fmt.Fprintf(stderr, "toolhost %s: %v\n", cmd, err)
		return nil, false
	}
	return db, true
}

// parseFlags parses a command line (parseArgs) and loads the config file it
// names.
func parseFlags(ctx context.Context, fs *flag.FlagSet, args []string, c *common) error {
	if err := parseArgs(ctx, fs, args); err != nil {
		return err
	}
	cfg, err := config.Load(c.config)
	if err != nil {
		return usageError{err}
	}
	if err := applyOverrides(fs, &cfg); err != nil {
		return usageError{err}
	}
	c.cfg = cfg
	if c.tel, err = telemetry.FromEnv(os.LookupEnv); err != nil {
		return usageError{err}
	}
	return nil
}

func cmdServe(ctx context.Context, args []string, stderr io.Writer) error {
	fs := newFlagSet("serve")
	var c common
	c.register(fs)
	var lf logFlags
	lf.register(fs, "info")
	addr := fs.String("addr", "127.0.0.1:8080", "listen `ADDRESS` (host:port; port 0 picks a free one)")
	dev := fs.Bool("dev", false, "development mode: no authentication; only on a loopback address")
	fs.Bool("stateless", false, "MCP stateless mode for replicas behind a load balancer (no sessions, no server-initiated notifications outside a request); overrides mcp.stateless")
	if err := parseFlags(ctx, fs, args, &c); err != nil {
		return err
	}
	if *dev && !isLoopback(*addr) {
		return usageError{fmt.Errorf("--dev turns authentication off, so it is only allowed on a loopback address (127.0.0.1, ::1 or localhost), not %q", *addr)}
	}
	logger, err := lf.logger(stderr)
	if err != nil {
		return err
	}
	var started time.Time
	defer func() {
		// The last line, once everything is closed and flushed.
		if !started.IsZero() {
			logger.Info("toolhost stopped", "served_for", time.Since(started).Round(time.Millisecond).String())
		}
	}()
	// Ctrl-C or SIGTERM from here on: during start-up it abandons the
	// start (run_code's compile is not waited for, see internal/toolhost's
	// toolset.go), after it shuts the server down gracefully.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The address first: a second server on a taken port fails at once,
	// before it opens the journal or compiles anything.
	ln, err := listen(*addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	if n, err := server.RaiseFileLimit(); err != nil {
		logger.Warn("cannot raise the open-file limit", "err", err)
	} else {
		logger.Info("open-file limit", "nofile", n)
	}
	if err := tuneGC(logger, c.cfg.Server.MemoryLimitMiB); err != nil {
		return usageError{err}
	}
	o := c.options(logger)
	o.Preload = true // compile run_code's runtimes and fill the pools now
	o.Dev, o.Keys = *dev, true
	o.FirstAdminKey = func(secret string) {
		fmt.Fprintf(stderr, "\ntoolhost: first start — created an admin API key for account \"admin\".\n"+
			"Store it now; it is never shown again:\n\n    %s\n\n"+
			"Use it as \"Authorization: Bearer <key>\" to create more keys: POST /admin/keys or `toolhost keys create`.\n\n", secret)
	}
	a, err := toolhost.Open(ctx, o)
	if err != nil {
		return startupError{err}
	}
	defer a.Close()
	exec := a.Executor()

	srv, err := a.Server(ctx, *addr, ln.Addr())
	if err != nil {
		return startupError{err}
	}
	if ctx.Err() != nil {
		logger.Info("toolhost stopped during start-up")
		return nil
	}
	base := "http://" + ln.Addr().String()
	auth := "off (--dev: every caller is the local account)"
	if !*dev {
		auth = "on: send Authorization: Bearer <API key>; the first admin key is printed once when the store is created, more with `toolhost keys create`"
		if srv.OAuth {
			auth += "; OAuth for remote MCP clients (docs/oauth.md)"
		}
	}
	logger.Info("toolhost serving", "addr", ln.Addr().String(), "version", version, "dev", *dev, "tools", len(exec.Catalog().List()),
		"mcp_url", base+"/mcp", "health_url", base+"/healthz", "auth", auth, "data", c.data)
	started = time.Now()
	return srv.Serve(ctx, ln)
}

// listen opens the server's address, explaining the usual failure.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, startupError{fmt.Errorf("%s is already in use (another toolhost, or `make run` still running?); "+
			"choose another address with --addr 127.0.0.1:8081 or TOOLHOST_ADDR=127.0.0.1:8081", addr)}
	}
	return nil, startupError{fmt.Errorf("listen on %s: %w (set --addr or TOOLHOST_ADDR)", addr, err)}
}

func cmdStdio(ctx context.Context, args []string, stderr io.Writer) error {
	fs := newFlagSet("stdio")
	var c common
	c.register(fs)
	var lf logFlags
	lf.register(fs, "warn")
	lang := fs.String("lang", string(catalog.FaceMCP.DefaultLang()), "`LANGUAGE` of tool descriptions: en or zh")
	if err := parseFlags(ctx, fs, args, &c); err != nil {
		return err
	}
	if *lang != "en" && *lang != "zh" {
		return usageError{fmt.Errorf("--lang must be en or zh, not %q", *lang)}
	}
	// stdout carries the protocol; every log line goes to stderr (which
	// Claude Desktop keeps in its MCP log file).
	logger, err := lf.logger(stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A client launches this process to use it: load run_code's runtimes
	// while it initializes, not on its first call.
	o := c.options(logger)
	o.Preload = true
	a, err := toolhost.Open(ctx, o)
	if err != nil {
		return startupError{err}
	}
	defer a.Close()
	// A remote server's listing that changes the local account's tools
	// reaches this client as list_changed, as over HTTP.
	srv := a.Stdio(catalog.Lang(*lang))
	if err := srv.RunStdio(ctx); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// delivery is the call's delivery mode: async_job with --async, else the
// tool's default.
func delivery(async bool) tools.Delivery {
	if async {
		return tools.DeliveryAsync
	}
	return tools.DeliveryDefault
}

func cmdCall(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("call")
	var c common
	c.register(fs)
	lang := fs.String("lang", "en", "`LANGUAGE` of tool messages: en or zh")
	idem := fs.String("idempotency-key", "", "idempotency `KEY` for this call: a repeat with the same key and arguments returns the stored result")
	slot := fs.String("slot", "", "caller `SLOT` this call declares (narrator, director, verifier, memory, or tools.slots of the config)")
	sess := fs.String("session", "", "session `ID` the call belongs to: its tool permissions apply, and it is created when new")
	async := fs.Bool("async", false, "run the call as a background job (async_job) of the store's queue: print its receipt at once; a toolhost serve on the same store runs it (toolhost jobs show ID reads its result)")
	approve := fs.Bool("approve", false, "approve the call if its approval policy asks (else a terminal on stdin is asked, y/N; without one the call ends approval_required, exit 1)")
	if err := parseFlags(ctx, fs, args, &c); err != nil {
		return exitCodeOf(err, stderr, "call")
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fmt.Fprintf(stderr, "toolhost call: want TOOL and optionally 'JSON' arguments, got %d words\nRun `toolhost call --help` for its flags.\n", fs.NArg())
		return exitUsage
	}
	tool := fs.Arg(0)
	argJSON := "{}"
	if fs.NArg() == 2 {
		argJSON = fs.Arg(1)
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// One call: pre-starting run_code's warm pools would only compete
	// with it for the CPU, and a call of another tool does not build
	// run_code's sandbox at all (run_code loads only its language's runtime).
	c.cfg.Sandbox.PythonPool, c.cfg.Sandbox.JavaScriptPool = -1, -1
	// A tool that is not a builtin may be a definition with a script
	// handler, which runs in run_code's sandbox.
	skipRunCode := !toolhost.NeedsRunCode(tool)
	o := c.options(logger)
	o.SkipRunCode = skipRunCode
	a, err := toolhost.Open(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "toolhost call: %v\n", err)
		if isUsage(err) {
			return exitUsage
		}
		return exitStartup
	}
	defer a.Close()
	exec := a.Executor()
	if _, ok := exec.Catalog().Lookup(tool); !ok && !slices.Contains(tools.SessionToolNames, tool) && !exec.HasDefinition(ctx, tools.LocalAccount, *sess, tool) && !exec.HasRemote(ctx, tools.LocalAccount, tool) {
		names := []string{}
		for _, s := range exec.Catalog().List() {
			names = append(names, s.Name)
		}
		if skipRunCode {
			names = append(names, toolhost.RunCodeName)
		}
		fmt.Fprintf(stderr, "toolhost call: unknown tool %q; available: %s\n", tool, strings.Join(names, ", "))
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	out, err := exec.Execute(ctx, tools.Proposal{
		Tool:           tool,
		Args:           json.RawMessage(argJSON),
		CallID:         "cli",
		Caller:         tools.Caller{Face: "cli", Slot: *slot, SessionID: *sess},
		IdempotencyKey: *idem,
		Delivery:       delivery(*async),
		Lang:           catalog.Lang(*lang),
		Confirm:        confirmer(*approve, stdin, stderr),
		Progress: func(p, total float64, msg string) {
			fmt.Fprintf(stderr, "progress: %s\n", progressText(p, total, msg))
		},
	})
	if err != nil {
		fmt.Fprintf(stderr, "toolhost call: %v\n", err)
		return exitStartup
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(callOutput(out))
	switch {
	case out.Code == runcode.CodeRuntimeUnavailable:
		// The tool could not start its runtime: the installation, not the
		// call, is what needs fixing.
		return exitStartup
	case out.Code == runcode.CodeRuntimeLoading:
		// The runtime compiles once per data folder; exiting now would
		// throw the compile away and the retry would fail the same way.
		fmt.Fprintln(stderr, "toolhost call: run_code's runtime is still compiling (once per data folder); waiting for it so the next call finds it compiled (Ctrl-C stops)")
		if err := a.FinishLoading(ctx); err != nil {
			fmt.Fprintf(stderr, "toolhost call: stopped waiting for the runtime: %v\n", err)
		} else {
			fmt.Fprintln(stderr, "toolhost call: the runtime is compiled; call again")
		}
		return exitStartup
	case out.IsError:
		return exitToolError
	}
	return exitOK
}

// progressText renders one progress notification for the terminal: "3/10"
// when the total is known, the bare count otherwise.
func progressText(p, total float64, msg string) string {
	s := strconv.FormatFloat(p, 'f', -1, 64)
	if total > 0 {
		s += "/" + strconv.FormatFloat(total, 'f', -1, 64)
	}
	if msg != "" {
		s += " " + msg
	}
	return s
}

// callResult is what toolhost call prints: the MCP-shaped result plus the
// pipeline's own fields, declared in sorted order of their names (the
// bytes of the map it replaced).
type callResult struct {
	Content           []textContent     `json:"content"`
	DurationMS        int64             `json:"duration_ms"`
	Error             *wire.ErrorObject `json:"error,omitempty"`
	ExecutionID       string            `json:"execution_id"`
	IsError           bool              `json:"isError"`
	Status            tools.Status      `json:"status"`
	StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
	Tool              string            `json:"tool"`
	Truncated         bool              `json:"truncated,omitempty"`
	Units             float64           `json:"units,omitempty"`
	Version           string            `json:"version,omitempty"`
}

type textContent struct {
	Text string `json:"text"`
	Type string `json:"type"`
}

func callOutput(out *tools.Outcome) callResult {
	r := callResult{
		Content:    []textContent{{Text: out.Text, Type: "text"}},
		DurationMS: out.Duration.Milliseconds(), ExecutionID: out.ExecutionID, IsError: out.IsError, Status: out.Status,
		StructuredContent: out.Structured, Tool: out.Tool, Truncated: out.Truncated, Units: out.Units, Version: out.Version,
	}
	if out.IsError {
		// The error object as MCP's _meta carries it: code, message and
		// the details (the rule of a permission_denied, retry_after_ms).
		obj, ok := out.ErrorObject()
		if !ok {
			obj = wire.ErrorObject{Code: out.Code, Message: out.Message}
		}
		r.Error = &obj
	}
	return r
}

// tuneGC sets serve's soft memory limit (limitMiB,
// server.memory_limit_mib); GOGC stays Go's default. Near the limit the
// collector runs as often as it must (at most half the CPU, Go's GC
// limiter), and it never fails an allocation. run_code's linear memories
// are mapped outside the Go heap and do not count against it. GOMEMLIMIT
// in the environment wins. Set once, when serve starts.
func tuneGC(logger *slog.Logger, limitMiB int64) error {
	if v, set := os.LookupEnv("GOMEMLIMIT"); set {
		logger.Info("memory limit from GOMEMLIMIT", "GOMEMLIMIT", v)
		return nil
	}
	switch {
	case limitMiB == 0:
		limitMiB = defaultMemoryLimitMiB
	case limitMiB < 0:
		debug.SetMemoryLimit(math.MaxInt64)
		logger.Info("no memory limit (server.memory_limit_mib < 0)")
		return nil
	case limitMiB < minMemoryLimitMiB:
		return fmt.Errorf("server.memory_limit_mib is %d; it must be at least %d (or -1 for no limit)", limitMiB, minMemoryLimitMiB)
	}
	debug.SetMemoryLimit(limitMiB << 20)
	logger.Info("memory limit", "mib", limitMiB)
	return nil
}

// defaultMemoryLimitMiB is serve's soft memory limit: several times the
// heap of a busy server (30-90 MiB live; fetch_page's body and extraction
// budgets bound what fetches add), so that with run_code's compiled
// runtimes and warm pools (about 100 MiB, mapped outside the Go heap) the
// process stays near 500 MiB under any load that does not hold more. A
// server that keeps thousands of MCP sessions open (each holds about
// 150 KiB) needs a higher one. minMemoryLimitMiB refuses limits the idle
// server alone would exceed, where the collector would run without pause.
const (
	defaultMemoryLimitMiB = 384
	minMemoryLimitMiB     = config.MinMemoryLimitMiB
)

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
