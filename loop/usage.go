package loop

import (
	"bytes"
	"encoding/json"
	"math"
)

// Usage is the token usage of one upstream call or of a whole run.
//
// InputTokens/OutputTokens are the canonical counts every format can render.
// Detail is the upstream's own usage object in Dialect, which a renderer of
// the same dialect returns as is; summing adds every number field by field,
// nested objects (prompt_tokens_details, cache_creation, ...) included.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
	// CachedInputTokens is the part of InputTokens read from a prompt cache.
	CachedInputTokens int64
	Dialect           Dialect
	Detail            map[string]any
	// Present is false when the upstream reported no usage.
	Present bool
}

// Add returns u + v.
func (u Usage) Add(v Usage) Usage {
	if !v.Present {
		return u
	}
	if !u.Present {
		v.Detail = cloneDetail(v.Detail)
		return v
	}
	out := Usage{
		InputTokens:       u.InputTokens + v.InputTokens,
		OutputTokens:      u.OutputTokens + v.OutputTokens,
		CachedInputTokens: u.CachedInputTokens + v.CachedInputTokens,
		Dialect:           u.Dialect,
		Present:           true,
	}
	if u.Dialect == v.Dialect {
		out.Detail = sumDetail(u.Detail, v.Detail)
	} else {
		// Different dialects cannot be added field by field; keep the
		// canonical counts only.
		out.Dialect = ""
	}
	return out
}

// sumDetail adds two usage objects: numbers are added, objects recurse,
// other values (strings such as service_tier) keep the latest.
func sumDetail(a, b map[string]any) map[string]any {
	out := cloneDetail(a)
	if out == nil {
		out = map[string]any{}
	}
	for k, bv := range b {
		av, ok := out[k]
		if !ok {
			out[k] = cloneValue(bv)
			continue
		}
		switch bt := bv.(type) {
		case json.Number:
			if at, ok := av.(json.Number); ok {
				out[k] = addNumbers(at, bt)
				continue
			}
		case map[string]any:
			if at, ok := av.(map[string]any); ok {
				out[k] = sumDetail(at, bt)
				continue
			}
		}
		out[k] = cloneValue(bv)
	}
	return out
}

func addNumbers(a, b json.Number) json.Number {
	ai, aerr := a.Int64()
	bi, berr := b.Int64()
	if aerr == nil && berr == nil {
		return json.Number(formatInt(ai + bi))
	}
	af, _ := a.Float64()
	bf, _ := b.Float64()
	s, _ := json.Marshal(af + bf)
	if math.IsInf(af+bf, 0) || math.IsNaN(af+bf) {
		return a
	}
	return json.Number(s)
}

func formatInt(v int64) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func cloneDetail(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	if m, ok := v.(map[string]any); ok {
		return cloneDetail(m)
	}
	return v
}

// DecodeUsageDetail reads an upstream usage object for Usage.Detail,
// keeping numbers exact (json.Number).
func DecodeUsageDetail(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// UsageNumber is the integer at key of a usage detail (0 when absent).
func UsageNumber(m map[string]any, key string) int64 {
	if n, ok := m[key].(json.Number); ok {
		if v, err := n.Int64(); err == nil {
			return v
		}
		if f, err := n.Float64(); err == nil {
			return int64(f)
		}
	}
	return 0
}
