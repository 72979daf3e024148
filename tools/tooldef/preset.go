package tooldef

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrReadOnly: a preset definition cannot be changed over the API.
var ErrReadOnly = errors.New("preset tool definitions are read-only")

// PresetID is the id of the preset of a name.
func PresetID(name string) string { return "preset_" + name }

// Presets checks the operator's presets with the same rules as a POST
// and returns them as definitions of every account (AccountID ""), loaded
// at t. Two presets of one name are refused.
func (r Rules) Presets(in []Input, t time.Time) ([]Definition, error) {
	var out []Definition
	seen := map[string]bool{}
	for i, p := range in {
		if p.Source != nil || p.SourceID != nil {
			return nil, fmt.Errorf("tools.presets[%d]: source and source_id are not set on a preset (its source is preset)", i)
		}
		d := New()
		if err := r.Apply(&d, p, true); err != nil {
			return nil, fmt.Errorf("tools.presets[%d]: %w", i, err)
		}
		if seen[d.Name] {
			return nil, fmt.Errorf("tools.presets[%d]: a second preset named %s", i, d.Name)
		}
		seen[d.Name] = true
		d.ID, d.Source, d.CreatedAt, d.UpdatedAt = PresetID(d.Name), SourcePreset, t, t
		out = append(out, d)
	}
	return out, nil
}

// WithPresets returns a Store whose every account also sees presets:
// listed and read like its own definitions, never written (ErrReadOnly).
func WithPresets(s Store, presets []Definition) Store {
	if len(presets) == 0 {
		return s
	}
	m := map[string]Definition{}
	for _, p := range presets {
		m[p.ID] = p
	}
	return &presetStore{Store: s, presets: presets, byID: m}
}

type presetStore struct {
	Store
	presets []Definition
	byID    map[string]Definition
}

func (s *presetStore) preset(account string, d Definition) Definition {
	d = clone(d)
	d.AccountID = account
	return d
}

func (s *presetStore) GetDefinition(ctx context.Context, account, id string) (Definition, error) {
	if p, ok := s.byID[id]; ok {
		return s.preset(account, p), nil
	}
	return s.Store.GetDefinition(ctx, account, id)
}

func (s *presetStore) ListDefinitions(ctx context.Context, q Query) ([]Definition, int, error) {
	var all []Definition
	if q.Source != SourcePreset {
		inner := q
		inner.Limit, inner.Offset = 0, 0
		own, _, err := s.Store.ListDefinitions(ctx, inner)
		if err != nil {
			return nil, 0, err
		}
		all = own
	}
	for _, p := range s.presets {
		if (q.Name != "" && p.Name != q.Name) || (q.Source != "" && q.Source != SourcePreset) ||
			(q.HasSourceID && q.SourceID != "") || (q.Enabled != nil && p.Enabled != *q.Enabled) {
			continue
		}
		all = append(all, s.preset(q.AccountID, p))
	}
	out, total := page(all, q)
	return out, total, nil
}

func (s *presetStore) UpdateDefinition(ctx context.Context, d Definition) error {
	if _, ok := s.byID[d.ID]; ok {
		return ErrReadOnly
	}
	return s.Store.UpdateDefinition(ctx, d)
}

func (s *presetStore) DeleteDefinition(ctx context.Context, account, id string) error {
	if _, ok := s.byID[id]; ok {
		return ErrReadOnly
	}
	return s.Store.DeleteDefinition(ctx, account, id)
}
