package tools

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestDetailsEncodeAsMarshal: the hand-written details are byte for byte
// what json.Marshal makes of them, escapes included.
func TestDetailsEncodeAsMarshal(t *testing.T) {
	odd := []string{"", "plain", `q"uote`, `back\slash`, "<a&b>", "tab\tnl\n", "é ü", "\u2028", "\x7f", "\xff bad", "ctl\x01"}
	for _, s := range odd {
		for _, d := range []interface{ raw() json.RawMessage }{
			proposedDetail{ArgsBytes: -3, CallID: s, Tool: s},
			parsedDetail{Bytes: 1 << 40, Parser: s},
			validatedDetail{ArgsDigest: s, Dialect: s, FormatAssertion: true, ReferenceClock: s, TimeZone: s, Validator: s},
			authorizedDetail{AccountID: s, KeyID: s},
			authorizedDetail{AccountID: s, Scopes: []string{}},
			authorizedDetail{Scopes: []string{s, "tools:call", s}},
			preparedDetail{ArgsDigest: s, SideEffectLevel: s},
			executingDetail{Attempt: 1, Deadline: s, TimeoutMS: 30000},
			observedDetail{ResultBytes: 0, Status: Status(s), Truncated: true},
			observedDetail{},
		} {
			want, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.raw(); !bytes.Equal(got, want) {
				t.Errorf("%T %q:\n got %s\nwant %s", d, s, got, want)
			}
		}
	}
}

var (
	benchValidated = validatedDetail{ArgsDigest: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", Dialect: "https://json-schema.org/draft/2020-12/schema",
		FormatAssertion: true, ReferenceClock: "2026-12-04T18:29:53.123456789Z", TimeZone: "UTC", Validator: "jsonschema/v6"}
	benchProposed = proposedDetail{ArgsBytes: 28, Tool: "get_time"}
)

// BenchmarkDetails: two of a call's details, hand-written and by
// json.Marshal (what encodeDetail would do with the struct).
func BenchmarkDetails(b *testing.B) {
	b.Run("raw", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = benchValidated.raw()
			_ = benchProposed.raw()
		}
	})
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(benchValidated)
			_, _ = json.Marshal(benchProposed)
		}
	})
}
