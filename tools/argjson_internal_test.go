package tools

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// argsBodies: ParseArgs (strictjson.Decode when it vouches) must read each
// exactly as the token walk does, value and error alike.
var argsBodies = []string{
	`{"timezone":"Asia/Shanghai"}`,
	` {"a" : [ 1 , 2.50 , -0 , 2e1 , 1E-3 , 123456789012345678901 , true , false , null , "s" , { } , [ ] ] , "b" : { "c" : { "d" : "e" } } } `,
	`{"esc":"a\"b\\c\/d\u00e9\ud83d\ude00\n","raw":"é","bad":"` + "\xff" + `","lone":"\ud800"}`,
	`{"a":1,"\u0061":2}`,
	`{"\u0061":1}`,
	`{"a":{"x":1,"x":2}}`,
	`{"a":[{"k":1},{"k":1,"k":2}]}`,
	`{"é":1}`,
	`{"a":1e999}`,
	`{"a":-1e400}`,
	`{"a":1e-400}`,
	`{"a":NaN}`,
	`{"a":1} {"b":2}`,
	`{"a":1}x`,
	`[1,2]`,
	`"x"`,
	`7`,
	`{"a":`,
	`{"a" 1}`,
	`{"a":[1,]}`,
	`{"a":01}`,
	strings.Repeat(`{"a":`, 600) + "1" + strings.Repeat("}", 600),
	`{"big":` + strings.Repeat("9", 400) + `}`,
}

func TestParseArgsReadsAsTheWalk(t *testing.T) {
	for _, in := range argsBodies {
		trimmed := bytes.TrimSpace([]byte(in))
		got, gotErr := ParseArgs(trimmed)
		want, wantErr := parseArgsWalk(trimmed)
		if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
			t.Errorf("%.50s: error %v, want %v", in, gotErr, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%.50s:\n got %#v\nwant %#v", in, got, want)
		}
	}
}

func FuzzParseArgsReadsAsTheWalk(f *testing.F) {
	for _, in := range argsBodies {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		trimmed := bytes.TrimSpace(in)
		if len(trimmed) == 0 || string(trimmed) == "null" {
			return
		}
		got, gotErr := ParseArgs(trimmed)
		want, wantErr := parseArgsWalk(trimmed)
		if (gotErr == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: got %#v %v, want %#v %v", in, got, gotErr, want, wantErr)
		}
	})
}

func BenchmarkParseArgs(b *testing.B) {
	in := []byte(`{"timezone":"Asia/Shanghai","format":"rfc3339","items":[1,2.5,{"k":"v"}],"flag":true}`)
	for _, c := range []struct {
		name string
		f    func([]byte) (map[string]any, error)
	}{{"decode", ParseArgs}, {"walk", parseArgsWalk}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.f(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestCanonicalJSONAsEncoder: CanonicalJSON writes what json.Encoder wrote
// (and fails where it failed), for what ParseArgs builds and for values a
// Normalizer may put in.
func TestCanonicalJSONAsEncoder(t *testing.T) {
	values := []any{
		nil, true, "", "plain", "q\"b\\s/<&>\u2028\x7f\x01\n\té😀", "\xff", json.Number("-0.5e+3"), json.Number(""), json.Number("01"), json.Number("1."),
		[]any(nil), []any{}, map[string]any(nil), map[string]any{},
		map[string]any{"b": []any{json.Number("1"), nil, map[string]any{"z": "é", "a": false}}, "a": "x", "é": 1.5, "<": int64(3)},
		map[string]any{"t": time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "f": 2.0},
		map[string]any{"bad": math.Inf(1)},
		[]any{map[string]any{"k": []string{"a"}}},
	}
	for _, in := range argsBodies {
		if v, err := ParseArgs([]byte(in)); err == nil {
			values = append(values, v)
		}
	}
	for _, v := range values {
		got, gotErr := CanonicalJSON(v)
		want, wantErr := encodeCanonical(v)
		if (gotErr == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
			t.Errorf("%#v:\n got %s %v\nwant %s %v", v, got, gotErr, want, wantErr)
		}
	}
}

func FuzzCanonicalJSONAsEncoder(f *testing.F) {
	for _, in := range argsBodies {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		v, err := ParseArgs(in)
		if err != nil {
			return
		}
		got, gotErr := CanonicalJSON(v)
		want, wantErr := encodeCanonical(v)
		if (gotErr == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("%q:\n got %s %v\nwant %s %v", in, got, gotErr, want, wantErr)
		}
	})
}

func BenchmarkCanonicalJSON(b *testing.B) {
	v, err := ParseArgs([]byte(`{"timezone":"Asia/Shanghai","format":"rfc3339","items":[1,2.5,{"k":"v"}],"flag":true}`))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		f    func(any) (json.RawMessage, error)
	}{{"append", CanonicalJSON}, {"encoder", encodeCanonical}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.f(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
