package tools

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseArgsRefusesWhatStrictJSONForbids(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr string // substring; "" means success
		want    string // canonical JSON on success
	}{
		{name: "empty means no arguments", in: "", want: `{}`},
		{name: "null means no arguments", in: " null ", want: `{}`},
		{name: "object", in: `{"b":1,"a":"x"}`, want: `{"a":"x","b":1}`},
		{name: "equal numbers spelled alike", in: `{"a":20.0,"b":2e1,"c":0.5,"d":-0}`, want: `{"a":20,"b":20,"c":0.5,"d":0}`},
		{name: "duplicate key at top", in: `{"sides":20,"sides":6}`, wantErr: `duplicate key "sides" in the object at the top level`},
		{name: "duplicate key nested", in: `{"a":{"x":1,"x":2}}`, wantErr: `duplicate key "x" in the object at /a`},
		{name: "duplicate key in array item", in: `{"a":[{"k":1},{"k":1,"k":2}]}`, wantErr: `duplicate key "k" in the object at /a/1`},
		{name: "NaN", in: `{"a":NaN}`, wantErr: "NaN at byte 5 is not a JSON number"},
		{name: "Infinity", in: `{"a":Infinity}`, wantErr: "Infinity"},
		{name: "negative Infinity", in: `{"a":-Infinity}`, wantErr: "Infinity"},
		{name: "NaN inside a string is fine", in: `{"a":"NaN"}`, want: `{"a":"NaN"}`},
		{name: "overflowing number", in: `{"a":1e999}`, wantErr: "not a finite number"},
		{name: "trailing value", in: `{"a":1} {"b":2}`, wantErr: "trailing data"},
		{name: "trailing garbage", in: `{"a":1}x`, wantErr: "trailing data"},
		{name: "not an object", in: `[1,2]`, wantErr: "must be a JSON object, got an array"},
		{name: "string", in: `"x"`, wantErr: "got a string"},
		{name: "truncated", in: `{"a":`, wantErr: "unexpected end of input"},
		{name: "syntax", in: `{"a" 1}`, wantErr: "invalid character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseArgs([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseArgs(%s) = %v, want error containing %q", tt.in, got, tt.wantErr)
				}
				if !errors.Is(err, ErrArgsSyntax) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseArgs(%s) error = %v, want ErrArgsSyntax containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseArgs(%s): %v", tt.in, err)
			}
			b, err := CanonicalJSON(got)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Fatalf("canonical = %s, want %s", b, tt.want)
			}
		})
	}
}

func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":{"b":[1,2,{"c":null}]}}`, `{"a":1,"a":2}`, `{"a":NaN}`, `{"a":1e999}`, `[]`, `{"a":"\u0000"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		obj, err := ParseArgs(data)
		if err != nil {
			return
		}
		// Whatever we accept must be valid JSON that encoding/json also
		// accepts, and canonicalization must be a fixed point.
		b, err := CanonicalJSON(obj)
		if err != nil {
			t.Fatalf("canonical of accepted input: %v", err)
		}
		if !json.Valid(b) {
			t.Fatalf("canonical form is not JSON: %s", b)
		}
		again, err := ParseArgs(b)
		if err != nil {
			t.Fatalf("canonical form refused: %v", err)
		}
		b2, _ := CanonicalJSON(again)
		if string(b) != string(b2) {
			t.Fatalf("canonicalization not stable: %s vs %s", b, b2)
		}
	})
}
