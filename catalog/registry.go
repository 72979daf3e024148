package catalog

import (
	"fmt"
	"sync"
)

// Registry is the ordered set of tool specs a server publishes. It is safe for
// concurrent use; specs are values, so readers never see a spec change.
type Registry struct {
	mu    sync.RWMutex
	order []string
	specs map[string]Spec
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{specs: map[string]Spec{}}
}

// Add registers a spec. A second spec with the same name is an error: a
// registry publishes one version of each tool.
func (r *Registry) Add(s Spec) error {
	s, err := Prepare(s)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.specs[s.Name]; dup {
		return fmt.Errorf("tool %s registered twice", s.Name)
	}
	r.specs[s.Name] = s
	r.order = append(r.order, s.Name)
	return nil
}

// Lookup returns the spec of the named tool.
func (r *Registry) Lookup(name string) (Spec, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s, ok := r.specs[name]
	return s, ok
}

// List returns every spec in registration order.
func (r *Registry) List() []Spec {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Spec, 0, len(r.order))
	for _, n := range r.order {
		out = append(out, r.specs[n])
	}
	return out
}
