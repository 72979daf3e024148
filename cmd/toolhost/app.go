package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/toolhost/toolhost/internal/keys"
	"github.com/toolhost/toolhost/internal/store"
	"github.com/toolhost/toolhost/sandbox"
	"github.com/toolhost/toolhost/tools"
	"github.com/toolhost/toolhost/tools/mcpremote"
	"github.com/toolhost/toolhost/tools/session"
	"github.com/toolhost/toolhost/tools/tooldef"
)

// app is what serve, stdio and call run on, built once by openApp from
// the flags and the config: the tools (run_code's sandbox among them), the
// one store (one pool, one migration pass) that the journal, the keys,
// the sessions and the tool definitions share, and the executor over them.
// close releases everything in the reverse order of opening.
type app struct {
	db *store.DB
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
	closers    []func()
}

// appOptions say what a command needs of the app.
type appOptions struct {
	// preload starts loading run_code's runtimes as soon as the sandbox
	// exists (servers), not on the first call (one-shot commands).
	preload bool
	// skipRunCode leaves run_code (and its runtimes) out: toolhost call
	// of another tool.
	skipRunCode bool
	// keys, when set, builds the API-key service on the store; its
	// authorizer admits calls under the keys' limits (serve).
	keys func(db *store.DB) (*keys.Service, func(), error)
}

// openApp builds the app. run_code's sandbox comes first: with preload,
// its runtimes compile while the store opens and the journal reconciles.
func openApp(ctx context.Context, c *common, logger *slog.Logger, o appOptions) (_ *app, err error) {
	a := &app{}
	defer func() {
		if err != nil {
			a.close()
		}
	}()
	kit, err := toolset(c, logger, toolsetOptions{skipRunCode: o.skipRunCode, preload: o.preload})
	if err != nil {
		return nil, err
	}
	a.sandbox = kit.sandbox
	a.onClose(kit.close)
	if a.db, err = openStore(ctx, c); err != nil {
		return nil, err
	}
	a.onClose(func() {
		if err := a.db.Close(); err != nil {
			logger.Warn("closing the store", "err", err)
		}
	})
	var authorizer tools.Authorizer
	if o.keys != nil {
		ks, closeKeys, err := o.keys(a.db)
		if err != nil {
			return nil, err
		}
		a.keys = ks
		a.onClose(closeKeys)
		authorizer = tools.KeysAuthorizer(ks)
	}
	presets, err := presetDefinitions(c)
	if err != nil {
		return nil, err
	}
	// Every call of a custom tool lists the account's definitions: the
	// cache answers from memory; writes here forget at once, another
	// replica's within its one-second TTL (tooldef.Cache).
	defs := tooldef.NewCache(a.db, time.Second)
	a.onClose(defs.Close)
	a.defs = tooldef.WithPresets(defs, presets)
	// The session store the REST API and the pipeline share: the store's,
	// behind a short-lived cache.
	sessions := session.NewCache(a.db, time.Second)
	a.onClose(sessions.Close)
	jr, err := openJournal(ctx, c, a.db, logger)
	if err != nil {
		return nil, err
	}
	a.onClose(jr.Close)
	if err := openGateway(c, a, logger); err != nil {
		return nil, usageError{err}
	}
	a.onClose(a.gateway.Close)
	a.exec, err = tools.NewExecutor(tools.Options{
		DefaultTimeout:     c.cfg.Tools.DefaultTimeout.D(),
		MaxResultBytes:     c.cfg.Tools.MaxResultBytes,
		JournalArgsBytes:   c.cfg.Journal.MaxArgsBytes,
		JournalResultBytes: c.cfg.Journal.MaxResultBytes,
		Logger:             logger,
		Journal:            jr,
		Authorizer:         authorizer,
		LogCalls:           true,
		LogSample:          c.cfg.Log.Sample(),
		Slots:              c.cfg.Tools.Slots,
		Sessions:           sessions,
		Definitions:        a.defs,
		Variables:          a.db,
		Scripts:            scriptRunner(a.sandbox),
		ScriptsEnabled:     scriptsEnabled(c),
		Remote:             a.gateway,
	}, kit.tools...)
	if err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	return a, nil
}

// onClose adds f to what close releases (last added, first released).
func (a *app) onClose(f func()) { a.closers = append(a.closers, f) }

// close releases what openApp opened, in reverse order.
func (a *app) close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
	a.closers = nil
}
