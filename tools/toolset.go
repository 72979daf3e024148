package tools

import (
	"context"

	"toolhost/catalog"
)

// ToolSet is an ordered, read-only set of tool specs: the tools one caller
// can reach. Unlike a catalog.Registry it holds definitions' specs, whose
// names follow the definition rule (A-Z a-z 0-9 _ -, as the OpenAI and
// Anthropic function names do) rather than the builtins' lower-case one.
type ToolSet struct {
	specs []catalog.Spec
	index map[string]int
}

// NewToolSet returns the set of specs in their order; a later spec of a
// name already present is left out.
func NewToolSet(specs ...catalog.Spec) *ToolSet {
	s := &ToolSet{index: make(map[string]int, len(specs))}
	for _, sp := range specs {
		if _, dup := s.index[sp.Name]; dup {
			continue
		}
		s.index[sp.Name] = len(s.specs)
		s.specs = append(s.specs, sp)
	}
	return s
}

// Lookup returns the spec of the named tool.
func (s *ToolSet) Lookup(name string) (catalog.Spec, bool) {
	i, ok := s.index[name]
	if !ok {
		return catalog.Spec{}, false
	}
	return s.specs[i], true
}

// List returns every spec in order.
func (s *ToolSet) List() []catalog.Spec { return append([]catalog.Spec(nil), s.specs...) }

// HostedCatalog is what a hosted /v1 loop of this caller may declare and
// run: the published tools; with a session, the session builtins; then
// the account's enabled custom and preset tools and, in a session that
// plays a character, that character's tools, in name order — exactly the
// tools Execute would find for these names. Definitions keep their own
// names on the wire. A session that does not exist yet has no character.
func (e *Executor) HostedCatalog(ctx context.Context, account, sessionID string) (*ToolSet, error) {
	if account == "" {
		account = e.opts.AccountID
	}
	specs := e.catalog.List()
	if sessionID != "" {
		specs = append(specs, e.SessionSpecs()...)
	}
	character, err := e.characterOf(ctx, account, sessionID)
	if err != nil {
		return nil, err
	}
	custom, err := e.customSpecs(ctx, account, character)
	if err != nil {
		return nil, err
	}
	return NewToolSet(append(specs, custom...)...), nil
}
