package tools

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/internal/clip"
)

// JobLimits are an account's own limits of background jobs; a zero field
// is the server's (Options.MaxJobsPerAccount, no running limit of its
// own, results kept as long as the journal keeps the record).
type JobLimits struct {
	// MaxJobs bounds the account's queued and running jobs together.
	MaxJobs int `json:"max_jobs"`
	// MaxRunning bounds how many of its jobs run at once; a job over it
	// waits queued.
	MaxRunning int `json:"max_running"`
	// ResultRetention is how long a finished job's result is kept; then
	// it is dropped and its record says so (ResultExpiredAt).
	ResultRetention time.Duration `json:"-"`
	UpdatedAt       time.Time     `json:"-"`
}

// MaxJobLimit bounds JobLimits.MaxJobs and MaxRunning; MaxResultRetention
// bounds ResultRetention.
const (
	MaxJobLimit        = 100_000
	MaxResultRetention = 10 * 365 * 24 * time.Hour
)

// Check reports whether the limits are in range.
func (l JobLimits) Check() error {
	switch {
	case l.MaxJobs < 0 || l.MaxJobs > MaxJobLimit:
		return fmt.Errorf("max_jobs must be 0 (the server's) to %d", MaxJobLimit)
	case l.MaxRunning < 0 || l.MaxRunning > MaxJobLimit:
		return fmt.Errorf("max_running must be 0 (no limit of its own) to %d", MaxJobLimit)
	case l.ResultRetention < 0 || l.ResultRetention > MaxResultRetention:
		return fmt.Errorf("result_retention must be 0 (the journal's) to %s", MaxResultRetention)
	case l.ResultRetention > 0 && l.ResultRetention < time.Second:
		return errors.New("result_retention must be at least 1s")
	}
	return nil
}

// AccountSettings keep what an account chose of its background jobs:
// the default delivery mode of builtin tools (an account's override, as
// a remote MCP tool's is in its server's registration) and its job limits.
// internal/store implements it on the journal's database.
type AccountSettings interface {
	// BuiltinDeliveries are the account's default delivery modes of
	// builtin tools, by tool name (none: an empty map).
	BuiltinDeliveries(ctx context.Context, account string) (map[string]Delivery, error)
	// SetBuiltinDelivery sets the account's default delivery mode of a
	// builtin tool; DeliveryDefault removes it (the tool's own again).
	SetBuiltinDelivery(ctx context.Context, account, tool string, d Delivery, at time.Time) error
	// JobLimits are the account's limits (zero when it has none).
	JobLimits(ctx context.Context, account string) (JobLimits, error)
	// SetJobLimits replaces them.
	SetJobLimits(ctx context.Context, account string, l JobLimits) error
}

// Errors of the builtin settings.
var (
	// ErrNoSuchBuiltin: no builtin tool has that name.
	ErrNoSuchBuiltin = errors.New("no builtin tool of that name")
	// ErrNoSettings: the server keeps no account settings (no store).
	ErrNoSettings = errors.New("this server keeps no account settings (it needs a SQLite or PostgreSQL store)")
)

// BuiltinSetting is an account's view of one builtin tool's delivery:
// what the tool allows, what the account chose, and what a call without
// a delivery of its own gets (with its basis, as the runtime catalog's
// metadata_basis_detail names it).
type BuiltinSetting struct {
	Name                     string `json:"name"`
	AsyncCapability          string `json:"async_capability"`
	DefaultDeliveryMode      string `json:"default_delivery_mode"`
	DefaultDeliveryModeBasis string `json:"default_delivery_mode_basis"`
	// Override is the account's own choice; null when it has none.
	Override *string `json:"override"`
}

// builtinSpec is the builtin tool name names, or ErrNoSuchBuiltin.
func (e *Executor) builtinSpec(name string) (catalog.Spec, error) {
	ent, ok := e.tools[name]
	if !ok {
		ent, ok = e.sessionTools[name]
	}
	if !ok {
		return catalog.Spec{}, fmt.Errorf("%w: %q", ErrNoSuchBuiltin, clip.Echo(name))
	}
	return ent.spec, nil
}

// BuiltinSetting is the account's delivery setting of the builtin name.
func (e *Executor) BuiltinSetting(ctx context.Context, account, name string) (BuiltinSetting, error) {
	spec, err := e.builtinSpec(name)
	if err != nil {
		return BuiltinSetting{}, err
	}
	var ds map[string]Delivery
	if e.opts.Settings != nil {
		if ds, err = e.opts.Settings.BuiltinDeliveries(ctx, account); err != nil {
			return BuiltinSetting{}, fmt.Errorf("settings of %s: %w", name, err)
		}
	}
	return builtinSetting(spec, ds[name]), nil
}

func builtinSetting(spec catalog.Spec, override Delivery) BuiltinSetting {
	spec, basis := withOverride(spec, override)
	s := BuiltinSetting{Name: spec.Name, AsyncCapability: catalog.InlineOnly, DefaultDeliveryMode: string(deliveryOf(spec, DeliveryDefault)),
		DefaultDeliveryModeBasis: basis}
	if spec.Deferrable() {
		s.AsyncCapability = catalog.DeferredOK
	}
	if override != DeliveryDefault {
		o := string(override)
		s.Override = &o
	}
	return s
}

// withOverride is spec under the account's default delivery d of it, and
// the basis of its default_delivery_mode. An override the tool no longer
// allows (async_job of a tool now inline_only) is ignored.
func withOverride(spec catalog.Spec, d Delivery) (catalog.Spec, string) {
	switch {
	case d == DeliveryInline:
		spec.DeferByDefault = false
	case d == DeliveryAsync && spec.Deferrable():
		spec.DeferByDefault = true
	default:
		return spec, basisDeclared
	}
	return spec, BasisAccountOverride
}

// SetBuiltinSetting sets (or, with DeliveryDefault, removes) the
// account's default delivery mode of the builtin name. async_job of an
// inline_only tool is refused with CodeDeliveryUnsupported.
func (e *Executor) SetBuiltinSetting(ctx context.Context, account, name string, d Delivery) (BuiltinSetting, error) {
	spec, err := e.builtinSpec(name)
	if err != nil {
		return BuiltinSetting{}, err
	}
	if _, err := ParseDelivery(string(d)); err != nil {
		return BuiltinSetting{}, Errorf(CodeInvalidArgs, "default_delivery_mode: %v", err)
	}
	if d == DeliveryAsync && !spec.Deferrable() {
		return BuiltinSetting{}, Errorf(CodeDeliveryUnsupported, "%s runs inline only (async_capability inline_only); its default_delivery_mode cannot be async_job", name)
	}
	if e.opts.Settings == nil {
		return BuiltinSetting{}, ErrNoSettings
	}
	if err := e.opts.Settings.SetBuiltinDelivery(ctx, account, name, d, e.opts.Clock()); err != nil {
		return BuiltinSetting{}, fmt.Errorf("settings of %s: %w", name, err)
	}
	return builtinSetting(spec, d), nil
}

// jobLimits are the account's job limits, with the server's where it has
// none of its own.
func (e *Executor) jobLimits(ctx context.Context, account string) (JobLimits, error) {
	var l JobLimits
	if e.opts.Settings != nil {
		var err error
		if l, err = e.opts.Settings.JobLimits(ctx, account); err != nil {
			return l, fmt.Errorf("job limits of %s: %w", account, err)
		}
	}
	if l.MaxJobs == 0 {
		l.MaxJobs = e.opts.MaxJobsPerAccount
	}
	return l, nil
}
