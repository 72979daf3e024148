package loop

import (
	"errors"
	"fmt"
	"math"
	"path"
	"strings"
)

// ErrModelUnavailable: no configured route serves the model with tool
// calling (seed rule 6: hosted requests never fall back to a text protocol).
var ErrModelUnavailable = errors.New("model_unavailable")

// ErrBadAnswer: the upstream answered with something its client cannot
// read (a broken event stream, an answer over the size limit); the
// error's text says what, and names no address.
var ErrBadAnswer = errors.New("the upstream's answer cannot be read")

// Price is what one million tokens cost, in quota units.
type Price struct {
	Input       float64 `json:"input"`
	CachedInput float64 `json:"cached_input"`
	Output      float64 `json:"output"`
}

// Route is one upstream: where to send a model's requests and what it can do.
type Route struct {
	Name     string
	Protocol Dialect
	// Models are exact model names or path.Match patterns ("gpt-4o*"); an
	// empty list serves every model.
	Models        []string
	SupportsTools bool
	// Prices by model name or pattern; "*" is the default. A model without
	// a price costs 0.
	Prices   map[string]Price
	Upstream Upstream
	// Unavailable, when set, says why the route cannot serve (its API key
	// is missing, say): it is configured but never picked.
	Unavailable string
}

// Serves reports whether the route serves model.
func (r *Route) Serves(model string) bool {
	if len(r.Models) == 0 {
		return true
	}
	for _, p := range r.Models {
		if p == model {
			return true
		}
		if ok, err := path.Match(p, model); err == nil && ok {
			return true
		}
	}
	return false
}

// Cost is the quota cost of one upstream call: cached input at the cached
// price when one is set, rounded to a whole unit.
func (r *Route) Cost(model string, u Usage) int64 {
	p, ok := r.price(model)
	if !ok || !u.Present {
		return 0
	}
	in := float64(u.InputTokens)
	cached := 0.0
	if p.CachedInput > 0 {
		cached = float64(min(u.CachedInputTokens, u.InputTokens))
		in -= cached
	}
	c := (in*p.Input + cached*p.CachedInput + float64(u.OutputTokens)*p.Output) / 1e6
	return int64(math.Round(c))
}

func (r *Route) price(model string) (Price, bool) {
	if p, ok := r.Prices[model]; ok {
		return p, true
	}
	for pat, p := range r.Prices {
		if pat == "*" {
			continue
		}
		if ok, err := path.Match(pat, model); err == nil && ok {
			return p, true
		}
	}
	p, ok := r.Prices["*"]
	return p, ok
}

// Router picks a route for a model. Routes are tried in configuration order.
type Router struct {
	routes []*Route
}

// NewRouter checks and holds routes.
func NewRouter(routes ...*Route) (*Router, error) {
	seen := map[string]bool{}
	for _, r := range routes {
		if r.Name == "" {
			return nil, errors.New("route without a name")
		}
		if seen[r.Name] {
			return nil, fmt.Errorf("route %s defined twice", r.Name)
		}
		seen[r.Name] = true
		if r.Upstream == nil {
			return nil, fmt.Errorf("route %s: no upstream client", r.Name)
		}
		for _, p := range r.Models {
			if _, err := path.Match(p, ""); err != nil {
				return nil, fmt.Errorf("route %s: bad model pattern %q: %w", r.Name, p, err)
			}
		}
	}
	return &Router{routes: routes}, nil
}

// Pick returns the first available route serving model; with needTools
// only routes that support tool calling qualify. ErrModelUnavailable when
// none does, saying what to change: the route that would have served and
// why it cannot, or that hosted.routes has none for the model.
func (r *Router) Pick(model string, needTools bool) (*Route, error) {
	var unavailable []string
	var names []string
	if r != nil {
		for _, rt := range r.routes {
			names = append(names, rt.Name)
			if !rt.Serves(model) || (needTools && !rt.SupportsTools) {
				continue
			}
			if rt.Unavailable != "" {
				unavailable = append(unavailable, fmt.Sprintf("route %s is unavailable: %s", rt.Name, rt.Unavailable))
				continue
			}
			return rt, nil
		}
	}
	what := fmt.Sprintf("no route serves model %q", model)
	if needTools {
		what += " with tool calling (supports_tools: true)"
	}
	if len(unavailable) > 0 {
		return nil, fmt.Errorf("%w: %s: %s", ErrModelUnavailable, what, strings.Join(unavailable, "; "))
	}
	configured := "none is configured"
	if len(names) > 0 {
		configured = "configured: " + strings.Join(names, ", ")
	}
	return nil, fmt.Errorf("%w: %s; add a route whose models match it to hosted.routes in the config file (%s)", ErrModelUnavailable, what, configured)
}

// RouteStatus is one route as /healthz shows it.
type RouteStatus struct {
	Name     string   `json:"name"`
	Protocol string   `json:"protocol"`
	Models   []string `json:"models"`
	State    string   `json:"state"` // "ready" or "unavailable"
	Error    string   `json:"error,omitempty"`
}

// Status lists the routes in order with their state.
func (r *Router) Status() []RouteStatus {
	out := []RouteStatus{}
	if r == nil {
		return out
	}
	for _, rt := range r.routes {
		st := RouteStatus{Name: rt.Name, Protocol: string(rt.Protocol), Models: rt.Models, State: "ready", Error: rt.Unavailable}
		if st.Models == nil {
			st.Models = []string{}
		}
		if rt.Unavailable != "" {
			st.State = "unavailable"
		}
		out = append(out, st)
	}
	return out
}
