package tools

import (
	"context"
	"fmt"

	"github.com/toolhost/toolhost/catalog"
	"github.com/toolhost/toolhost/tools/tooldef"
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
// plays a character, that character's tools, in name order; then the
// tools of the account's remote MCP servers that none of those shadows —
// exactly the tools Execute would find for these names. Definitions keep
// their own names on the wire. A session that does not exist yet has no
// character. The remote tools come from what the gateway already knows
// (RemoteTools.StoredListing): building the catalog asks no server.
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
	remote, err := e.hostedRemote(ctx, account)
	if err != nil {
		return nil, err
	}
	// NewToolSet keeps the first spec of a name: a definition's wins over
	// a remote tool's, as in resolve.
	return NewToolSet(append(append(specs, custom...), remote...)...), nil
}

// CharacterSpecs returns the specs of the character definitions a call in
// the account's session sessionID runs (the session's character's own,
// where no preset and no builtin has the name), for the MCP face, whose
// account-wide tools/list does not hold them. Nil when the session plays
// no character.
func (e *Executor) CharacterSpecs(ctx context.Context, account, sessionID string) ([]catalog.Spec, error) {
	if account == "" {
		account = e.opts.AccountID
	}
	character, err := e.characterOf(ctx, account, sessionID)
	if err != nil || character == "" {
		return nil, err
	}
	if e.opts.Definitions == nil {
		return nil, nil
	}
	on := true
	defs, _, err := e.opts.Definitions.ListDefinitions(ctx, tooldef.Query{AccountID: account, Source: tooldef.SourceCharacter,
		SourceID: character, HasSourceID: true, Enabled: &on, SortBy: tooldef.SortName, Asc: true})
	if err != nil {
		return nil, fmt.Errorf("character tools of %s: %w", sessionID, err)
	}
	var out []catalog.Spec
	for _, d := range defs {
		if _, builtin := e.tools[d.Name]; builtin {
			continue
		}
		if _, st := e.sessionTools[d.Name]; st {
			continue
		}
		// The winner of the name decides: a preset of that name runs
		// instead.
		c, err := e.customTool(ctx, account, sessionID, d.Name)
		if err != nil {
			return nil, err
		}
		if c != nil && c.def.ID == d.ID {
			out = append(out, definitionSpec(d))
		}
	}
	return out, nil
}
