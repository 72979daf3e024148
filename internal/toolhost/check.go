package toolhost

import (
	"log/slog"

	"github.com/toolhost/toolhost/server/v1/loop"
	"github.com/toolhost/toolhost/tools"
)

// Checked is what Check built from the options.
type Checked struct {
	// Tools are the names of the tools serve would publish, run_code last.
	Tools []string
	// Presets are the names of the config's preset tools.
	Presets []string
	// Routes are the /v1 routes and their state.
	Routes []loop.RouteStatus
}

// Check builds what serve would build from the options — every tool with
// its section, the /v1 routes, the preset tools — without opening the
// store or starting run_code's sandbox, and with the search cache in
// memory: it creates nothing. Its errors are ConfigErrors.
func Check(o Options) (*Checked, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	logger := o.Logger
	o.Config.Search.Cache.MemoryOnly = true
	kit, err := toolset(&o, logger, toolsetOptions{skipRunCode: true})
	if err != nil {
		return nil, ConfigError{err}
	}
	defer kit.close()
	exec, err := tools.NewExecutor(tools.Options{}, kit.tools...)
	if err != nil {
		return nil, ConfigError{err}
	}
	_, health, err := hostedRoutes(&o, exec, nil, nil, logger)
	if err != nil {
		return nil, err
	}
	presets, err := presetDefinitions(&o)
	if err != nil {
		return nil, ConfigError{err}
	}
	out := &Checked{}
	for _, s := range exec.Catalog().List() {
		out.Tools = append(out.Tools, s.Name)
	}
	out.Tools = append(out.Tools, RunCodeName)
	for _, p := range presets {
		out.Presets = append(out.Presets, p.Name)
	}
	if st, ok := health().(hostedStatus); ok {
		out.Routes = st.Routes
	}
	return out, nil
}
