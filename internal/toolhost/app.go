// Package toolhost assembles toolhost from its configuration: one store,
// the tools, the executor, the routes of serve. cmd/toolhost reads the
// flags, the environment and the config file and hands their values over
// in Options; this package reads neither, and is the one that picks the
// store (OpenStore).
package toolhost

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/toolhost/toolhost/internal/config"
	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/internal/telemetry"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/approval"
	"github.com/toolhost/toolhost/tools/mcpremote"
	"github.com/toolhost/toolhost/tools/session"
	"github.com/toolhost/toolhost/tools/tooldef"
)

// Options are what a command hands over to build toolhost: the loaded
// config and the values of the flags and the environment.
type Options struct {
	// Config is the config file with the flags that override its keys.
	Config config.Config
	// Data is the folder of local state (--data): the SQLite journal, its
	// spool, the wasm compilation cache, the search cache.
	Data string
	// Postgres, when set, holds the store in PostgreSQL instead of the
	// SQLite file under Data.
	Postgres string
	// RuntimeDirs is where run_code's runtime files are looked for, in
	// order.
	RuntimeDirs []string
	// TestTools also publishes the test-only sleep tools.
	TestTools bool
	// Dev turns authentication off (serve --dev): no first admin key, no
	// OAuth, every caller the local account.
	Dev bool
	// Version is the binary's version, told to MCP clients and servers.
	Version string
	Logger  *slog.Logger
	// LookupEnv reads the variables the config names by api_key_env (the
	// search providers', the /v1 routes'); nil finds none.
	LookupEnv func(key string) (string, bool)
	// UnsafeScriptHandler lets tool definitions carry script handlers
	// (ENABLE_UNSAFE_SCRIPT_HANDLER=true), as tools.enable_unsafe_script_handler
	// does.
	UnsafeScriptHandler bool
	// SecretKey seals the remote MCP servers' secrets (TOOLHOST_SECRET_KEY);
	// PreviousSecretKeys, comma-separated, still open what they sealed
	// (TOOLHOST_SECRET_KEY_PREVIOUS). Without a key, servers without
	// secrets still work.
	SecretKey, PreviousSecretKeys string

	// Preload starts loading run_code's runtimes as soon as the sandbox
	// exists (servers), not on the first call (one-shot commands).
	Preload bool
	// SkipRunCode leaves run_code (and its runtimes) out: toolhost call
	// of another tool.
	SkipRunCode bool
	// Keys builds the API-key service on the store; its authorizer admits
	// calls under the keys' limits (serve). Unless Dev, a store with no
	// key at all gets a first admin key, whose secret FirstAdminKey is
	// given to show once.
	Keys          bool
	FirstAdminKey func(secret string)
	// Telemetry is what OpenTelemetry records and where it exports it
	// (the OTEL_* variables, telemetry.FromEnv).
	Telemetry telemetry.Settings

	// tel is the telemetry Open built from Telemetry.
	tel *telemetry.Telemetry
}

// lookupEnv is LookupEnv, finding nothing when it is nil.
func (o *Options) lookupEnv(key string) (string, bool) {
	if o.LookupEnv == nil {
		return "", false
	}
	return o.LookupEnv(key)
}

// ConfigError is a failure the configuration causes (a /v1 route, the
// Redis URL, the secret key): what the operator fixes in the config file
// or the environment, not in the machine.
type ConfigError struct{ Err error }

func (e ConfigError) Error() string { return e.Err.Error() }

func (e ConfigError) Unwrap() error { return e.Err }

// App is what serve, stdio and call run on, built once by Open from the
// options: the tools (run_code's sandbox among them), the one store (one
// pool, one migration pass) that the journal, the keys, the sessions and
// the tool definitions share, and the executor over them. Close releases
// everything in the reverse order of opening.
type App struct {
	o  Options
	db *store.DB
	// settings are the accounts' settings of jobs, the store's behind a
	// short-lived cache (the executor and the job-limits route share it).
	settings *tools.SettingsCache
	// sandbox is run_code's sandbox; nil when run_code is left out.
	sandbox *sandbox.Sandbox
	// keys is the API-key service (serve only; nil otherwise).
	keys *keys.Service
	// defs is the tool definitions store: the store's, with the config's
	// presets.
	defs tooldef.Store
	// gateway serves the accounts' remote MCP servers as tools, their
	// secrets sealed by sealer; mcpChanged, set by serve and stdio, tells the MCP
	// face when an account's remote tools changed.
	gateway *mcpremote.Gateway
	sealer  *mcpremote.Sealer
	// mcpStore is the registered servers: the store's behind a cache the
	// gateway and /mcp-servers share, so a write there is what the next
	// call sees (mcpremote.Cache).
	mcpStore   mcpremote.Store
	mcpChanged func(account string)
	exec       *tools.Executor
	// jobs is the queue of deferred calls; WorkJobs makes this process
	// run them.
	jobs    *store.Jobs
	closers []func()
	// registry is what /metrics serves.
	registry *prometheus.Registry
}

// Open builds the App. run_code's sandbox comes first: with Preload,
// its runtimes compile while the store opens and the journal reconciles.
func Open(ctx context.Context, opts Options) (_ *App, err error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	a := &App{o: opts}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	o, logger := &a.o, opts.Logger
	if err := openTelemetry(ctx, a); err != nil {
		return nil, err
	}
	// The Redis the replicas share (serve only): limits and the
	// web_search and fetch_page caches.
	var rdb *redis.Client
	if o.Keys {
		if rdb, err = openRedis(o); err != nil {
			return nil, err
		}
		if rdb != nil {
			a.onClose(func() { rdb.Close() })
		}
	}
	kit, err := toolset(o, logger, toolsetOptions{skipRunCode: o.SkipRunCode, preload: o.Preload,
		shared: sharedSearchCache(o, rdb), sharedFetch: sharedFetchCache(o, rdb)})
	if err != nil {
		return nil, err
	}
	a.sandbox = kit.sandbox
	a.onClose(kit.close)
	if a.db, err = OpenStore(ctx, *o); err != nil {
		return nil, err
	}
	a.onClose(func() {
		if err := a.db.Close(); err != nil {
			logger.Warn("closing the store", "err", err)
		}
	})
	var authorizer tools.Authorizer
	if o.Keys {
		ks, closeKeys, err := setupKeys(ctx, o, a.db, rdb, logger)
		if err != nil {
			return nil, err
		}
		a.keys = ks
		a.onClose(closeKeys)
		authorizer = tools.KeysAuthorizer(ks)
	}
	presets, err := presetDefinitions(o)
	if err != nil {
		return nil, err
	}
	// Every call of a custom tool lists the account's definitions: the
	// cache answers from memory; writes here forget at once, another
	// replica's within its one-second TTL (tooldef.Cache).
	defs := tooldef.NewCache(a.db, time.Second, time.Now)
	a.defs = tooldef.WithPresets(defs, presets)
	// The session store the REST API and the pipeline share: the store's,
	// behind a short-lived cache.
	sessions := session.NewCache(a.db, time.Second, time.Now)
	// A call of run_code or fetch_page reads its account's default
	// delivery, a job its account's limits: from memory, as above.
	a.settings = tools.NewSettingsCache(a.db, time.Second, time.Now)
	jr, err := openJournal(ctx, o, a.db, logger)
	if err != nil {
		return nil, err
	}
	a.onClose(jr.Close)
	if err := openGateway(o, a, logger); err != nil {
		return nil, ConfigError{err}
	}
	a.onClose(a.gateway.Close)
	if a.jobs, err = jobQueue(o, a.db, logger); err != nil {
		return nil, err
	}
	a.exec, err = tools.NewExecutor(a.executorOptions(jr, authorizer, sessions), kit.tools...)
	if err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	return a, nil
}

// executorOptions are the executor's options from the config and the
// parts Open built.
func (a *App) executorOptions(jr *journal.Journal, authorizer tools.Authorizer, sessions session.Store) tools.Options {
	o, logger := &a.o, a.o.Logger
	return tools.Options{
		DefaultTimeout:       o.Config.Tools.DefaultTimeout.D(),
		MaxResultBytes:       o.Config.Tools.MaxResultBytes,
		MaxStoredResultBytes: o.Config.Tools.MaxStoredResultBytes,
		JournalArgsBytes:     o.Config.Journal.MaxArgsBytes,
		JournalResultBytes:   o.Config.Journal.MaxResultBytes,
		Logger:               logger,
		Journal:              jr,
		Authorizer:           authorizer,
		LogCalls:             true,
		LogSample:            o.Config.Log.Sample(),
		Slots:                o.Config.Tools.Slots,
		Sessions:             sessions,
		Definitions:          a.defs,
		Variables:            a.db,
		Scripts:              scriptRunner(a.sandbox),
		ScriptsEnabled:       scriptsEnabled(o),
		Remote:               a.gateway,
		Approvals:            a.db,
		ApprovalTTL:          o.Config.Tools.ApprovalTTL.D(),
		Policies:             policies(o.Config.Tools.RequireApproval),
		Tracer:               o.telemetry().Tracer,
		Meter:                o.telemetry().Meter,
		Jobs:                 a.jobs,
		MaxJobsPerAccount:    o.Config.Jobs.MaxPerAccount,
		JobTimeout:           o.Config.Jobs.Timeout.D(),
		Settings:             a.settings,
	}
}

// jobQueue is the store's queue of deferred calls, from the config's jobs
// section; running jobs may drain for half the shutdown timeout.
func jobQueue(o *Options, db *store.DB, logger *slog.Logger) (*store.Jobs, error) {
	return db.Jobs(store.JobOptions{Workers: o.Config.Jobs.Workers, JobTimeout: o.Config.Jobs.Timeout.D(),
		RescueAfter: o.Config.Jobs.RescueAfter.D(), Drain: o.Config.ShutdownTimeout.D() / 2, Logger: logger})
}

// WorkJobs makes this process run deferred calls from the store's job
// queue (serve), until Close: it lets running jobs finish for half the
// shutdown timeout, then hands them back to the queue.
func (a *App) WorkJobs(ctx context.Context) error {
	if err := observeJobs(&a.o, a.jobs); err != nil {
		return err
	}
	if err := a.jobs.Start(ctx, a.exec.RunJob); err != nil {
		return err
	}
	a.startJobAudit()
	a.onClose(func() {
		ctx, cancel := context.WithTimeout(context.Background(), a.o.Config.ShutdownTimeout.D())
		defer cancel()
		if err := a.jobs.Stop(ctx); err != nil {
			a.o.Logger.Warn("stopping the job queue", "err", err)
		}
	})
	return nil
}

// policies are the config's approval policies (checked by Validate).
func policies(m map[string]string) map[string]approval.Policy {
	out := make(map[string]approval.Policy, len(m))
	for name, p := range m {
		out[name] = approval.Policy(p)
	}
	return out
}

// Executor is the app's executor: every call of every face runs through it.
func (a *App) Executor() *tools.Executor { return a.exec }

// FinishLoading waits, until ctx ends, for run_code's runtimes that are
// still compiling. toolhost call uses it after a call that ended with
// runtime_loading: closing the sandbox would throw the half-done compile
// away, and every retry would end the same way; finished, the compile is
// in the data folder's cache and the next call finds it.
func (a *App) FinishLoading(ctx context.Context) error {
	if a.sandbox == nil {
		return nil
	}
	for lang, st := range a.sandbox.Status() {
		if st.State != "loading" {
			continue
		}
		if err := a.sandbox.Ready(ctx, lang); err != nil {
			return fmt.Errorf("the %s runtime: %w", lang, err)
		}
	}
	return nil
}

// onClose adds f to what Close releases (last added, first released).
func (a *App) onClose(f func()) { a.closers = append(a.closers, f) }

// every runs fn every d on a goroutine of its own (first at once, when
// first is set) until the app closes; Close cancels fn's context and waits
// for a run in progress.
func (a *App) every(d time.Duration, first bool, fn func(context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(d)
		defer t.Stop()
		if first {
			fn(ctx)
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			fn(ctx)
		}
	}()
	a.onClose(func() { cancel(); <-done })
}

// Close releases what Open opened, in reverse order.
func (a *App) Close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
	a.closers = nil
}
