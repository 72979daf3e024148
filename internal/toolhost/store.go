package toolhost

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/config"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/journal"
	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/server/admin"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/runcode"
	"github.com/toolhost/toolhost/tools/session"
	"github.com/toolhost/toolhost/tools/sleep"
	"github.com/toolhost/toolhost/tools/tooldef"
)

// storeDSN is the PostgreSQL URL when given, else the SQLite file under the
// data directory.
func storeDSN(o *Options) string {
	if o.Postgres != "" {
		return o.Postgres
	}
	return filepath.Join(o.Data, "toolhost.db")
}

// OpenStore opens the store the options name (Postgres, else the SQLite
// file under Data), migrated to the binary's schema: the one App.Open
// builds on, and the one the commands that read it directly (keys,
// journal) open alone.
func OpenStore(ctx context.Context, o Options) (*store.DB, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	db, err := store.Open(ctx, storeDSN(&o), store.Options{SQLiteSynchronous: o.Config.Journal.SQLiteSynchronous})
	if err != nil {
		return nil, fmt.Errorf("open the journal store: %w", err)
	}
	return db, nil
}

// openJournal starts the journal on the store: it marks this process
// alive there and reconciles the calls that dead processes left open,
// before any call runs. The caller closes the journal, then the store.
func openJournal(ctx context.Context, o *Options, db *store.DB, logger *slog.Logger) (*journal.Journal, error) {
	j := journal.New(db, journalOptions(o, logger))
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	n, err := j.Start(sctx)
	if err != nil {
		j.Close()
		return nil, err
	}
	logger.Info("journal ready", "store", db.Dialect(), "instance_id", j.InstanceID(), "reconciled", n)
	if err := observeJournal(o, j); err != nil {
		j.Close()
		return nil, err
	}
	return j, nil
}

// journalOptions are the journal's options from the config file's
// journal section.
func journalOptions(o *Options, logger *slog.Logger) journal.Options {
	delay := config.DefaultCommitDelay
	if d := o.Config.Journal.CommitDelay; d != nil {
		delay = d.D()
	}
	opts := journal.Options{
		InstanceID:           uuid.NewString(),
		CommitDelay:          delay,
		IdempotencyRetention: o.Config.Journal.IdempotencyRetention.D(),
		MaxBatch:             o.Config.Journal.MaxBatch,
		SpoolSync:            o.Config.Journal.SpoolSync,
		ApplyInterval:        o.Config.Journal.ApplyInterval.D(),
		ReadOnlyOpenDelay:    o.Config.Journal.OpenDelay(),
		Logger:               logger,
		OnApply:              journalApplied(o),
	}
	if sp := o.Config.Journal.Spool; sp == nil || *sp {
		opts.SpoolDir = filepath.Join(o.Data, "journal")
		opts.WaitForStore = o.Config.Journal.WaitForStore
	}
	return opts
}

// scriptsEnabled reports whether tool definitions may carry script
// handlers: ENABLE_UNSAFE_SCRIPT_HANDLER=true or the config key.
func scriptsEnabled(o *Options) bool {
	return o.Config.Tools.EnableUnsafeScriptHandler || o.UnsafeScriptHandler
}

// scriptRunner runs script handlers in run_code's sandbox when the
// toolset built one.
func scriptRunner(sb *sandbox.Sandbox) tools.ScriptRunner {
	if sb == nil {
		return nil
	}
	return runcode.NewScripts(sb)
}

// builtinNames are the tools toolhost call knows without reading the
// store: anything else may be a tool definition.
var builtinNames = []string{"get_time", "roll_dice", "random_choice", "web_search", "fetch_page", "run_code"}

// sessionBuiltins are the seed's builtins that need a session; their
// names are reserved for them.
var sessionBuiltins = tools.SessionToolNames

// presetDefinitions checks the config's tools.presets with the rules of
// POST /tools/definitions.
func presetDefinitions(o *Options) ([]tooldef.Definition, error) {
	slots := o.Config.Tools.Slots
	if len(slots) == 0 {
		slots = session.DefaultSlots
	}
	rules := tooldef.Rules{
		Slots: slots,
		Reserved: func(name string) bool {
			return slices.Contains(builtinNames, name) || slices.Contains(sessionBuiltins, name)
		},
		CheckSchema: func(raw []byte) error { return tools.CheckSchema("preset", raw) },
	}
	return rules.Presets(o.Config.Tools.Presets, time.Now())
}

// perAccountCap is a per-account cap of the config file as the REST API
// takes it: 0 is the default, a negative value no cap (0 there).
func perAccountCap(configured, def int) int {
	switch {
	case configured < 0:
		return 0
	case configured == 0:
		return def
	}
	return configured
}

// definitionRoutes are GET /tools/builtin and the definitions CRUD.
func definitionRoutes(o *Options, defs tooldef.Store, exec *tools.Executor, changed func(account string)) map[string]http.Handler {
	test := map[string]bool{}
	for _, t := range []tools.Tool{sleep.New(), sleep.NewEffect()} {
		test[t.Spec().Name] = true
	}
	var builtins []catalog.Spec
	for _, s := range exec.Catalog().List() {
		if !test[s.Name] {
			builtins = append(builtins, s)
		}
	}
	// Of the session builtins, GET /tools/builtin lists the one the seed
	// names there; the variables appear in the runtime catalog only.
	for _, s := range exec.SessionSpecs() {
		if s.Name == "get_character_info" {
			builtins = append(builtins, s)
		}
	}
	scripts := scriptsEnabled(o)
	d := &admin.Definitions{
		Store:    defs,
		Builtins: func() []catalog.Spec { return builtins },
		Rules: tooldef.Rules{
			Slots: exec.Slots(),
			Reserved: func(name string) bool {
				_, ok := exec.Catalog().Lookup(name)
				return ok || slices.Contains(sessionBuiltins, name)
			},
			CheckSchema: func(raw []byte) error { return tools.CheckSchema("definition", raw) },
		},
		ScriptsEnabled: func() bool { return scripts },
		Changed:        changed,
		Max:            perAccountCap(o.Config.Tools.MaxDefinitionsPerAccount, tooldef.DefaultMaxPerAccount),
	}
	return d.Routes()
}

// approvalRoutes are /approvals: the account's approvals, read and
// decided (docs/approvals.md).
func approvalRoutes(exec *tools.Executor) map[string]http.Handler {
	ap := &admin.Approvals{Store: exec.Approvals(), Decide: exec.DecideApproval, Clock: exec.Clock()}
	return ap.Routes()
}

// journalRoutes are the journal's REST routes and the sessions'.
func journalRoutes(exec *tools.Executor) map[string]http.Handler {
	routes := map[string]http.Handler{}
	jr := &admin.Journal{Store: exec.Journal().Store(), Slots: exec.Slots()}
	for pattern, h := range jr.Routes() {
		routes[pattern] = h
	}
	for pattern, h := range (&admin.Jobs{Cancel: exec}).Routes() {
		routes[pattern] = h
	}
	for pattern, h := range (&admin.ToolSettings{Builtins: exec}).Routes() {
		routes[pattern] = h
	}
	if st := exec.Sessions(); st != nil {
		ss := &admin.Sessions{Store: st, Slots: exec.Slots(),
			Runtime: func(ctx context.Context, account, id, slot string) (any, error) {
				return exec.Runtime(ctx, account, id, slot)
			}}
		for pattern, h := range ss.Routes() {
			routes[pattern] = h
		}
	}
	return routes
}
