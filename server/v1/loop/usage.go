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
	Detail            UsageDetail
	// Present is false when the upstream reported no usage.
	Present bool
}

// UsageDetail is an upstream's own usage object as encoding/json decodes
// it with numbers kept exact: json.Number, strings, and nested objects
// (UsageDetail or map[string]any). It is open by nature — every API and
// version adds fields — so it is summed by shape, not by name.
type UsageDetail map[string]any

// object is v as a usage object, when it is one.
func object(v any) (UsageDetail, bool) {
	switch v := v.(type) {
	case UsageDetail:
		return v, true
	case map[string]any:
		return v, true
	}
	return nil, false
}

// Object is the nested object at key (nil when absent or not an object).
func (d UsageDetail) Object(key string) UsageDetail {
	o, _ := object(d[key])
	return o
}

// Number is the integer at key (0 when absent).
func (d UsageDetail) Number(key string) int64 {
	if n, ok := d[key].(json.Number); ok {
		if v, err := n.Int64(); err == nil {
			return v
		}
		if f, err := n.Float64(); err == nil {
			return int64(f)
		}
	}
	return 0
}

// Add returns u + v.
func (u Usage) Add(v Usage) Usage {
	if !v.Present {
		return u
	}
	if !u.Present {
		v.Detail = v.Detail.clone()
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
func sumDetail(a, b UsageDetail) UsageDetail {
	out := a.clone()
	if out == nil {
		out = UsageDetail{}
	}
	for k, bv := range b {
		av, ok := out[k]
		if !ok {
			out[k] = cloneValue(bv)
			continue
		}
		if bt, ok := bv.(json.Number); ok {
			if at, ok := av.(json.Number); ok {
				out[k] = addNumbers(at, bt)
				continue
			}
		}
		if bt, ok := object(bv); ok {
			if at, ok := object(av); ok {
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

func (d UsageDetail) clone() UsageDetail {
	if d == nil {
		return nil
	}
	out := make(UsageDetail, len(d))
	for k, v := range d {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	if m, ok := object(v); ok {
		return m.clone()
	}
	return v
}

// DecodeUsageDetail reads an upstream usage object for Usage.Detail,
// keeping numbers exact (json.Number).
func DecodeUsageDetail(raw json.RawMessage) (UsageDetail, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var m UsageDetail
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}
