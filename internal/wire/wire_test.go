package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// mapBytes is what encoding a map gave before a struct replaced it.
func mapBytes(t testing.TB, m map[string]any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

type sample struct {
	Zeta  string          `json:"zeta"`
	Alpha int             `json:"alpha"`
	Maybe string          `json:"maybe,omitempty"`
	Raw   json.RawMessage `json:"raw,omitempty"`
	Skip  string          `json:"-"`
}

func TestMarshalWritesKeysInMapOrder(t *testing.T) {
	tests := []struct {
		name  string
		v     sample
		extra map[string]json.RawMessage
		want  map[string]any
	}{
		{"fields only", sample{Zeta: "z", Alpha: 1}, nil, map[string]any{"zeta": "z", "alpha": 1}},
		{"extra between fields", sample{Zeta: "z", Alpha: 1}, map[string]json.RawMessage{"m": json.RawMessage(`[1, 2]`), "b": nil},
			map[string]any{"zeta": "z", "alpha": 1, "m": json.RawMessage(`[1,2]`), "b": nil}},
		{"field wins over extra", sample{Zeta: "z", Alpha: 2}, map[string]json.RawMessage{"alpha": json.RawMessage(`9`)},
			map[string]any{"zeta": "z", "alpha": 2}},
		{"omitted field leaves the name to extra", sample{Zeta: "z"}, map[string]json.RawMessage{"maybe": json.RawMessage(`{"x":"<&>"}`)},
			map[string]any{"zeta": "z", "alpha": 0, "maybe": json.RawMessage(`{"x":"<&>"}`)}},
		{"escaped and unicode keys", sample{Zeta: "a\"b\\c,}{"}, map[string]json.RawMessage{"é\"k": json.RawMessage(`"v"`), "A": json.RawMessage(`true`)},
			map[string]any{"zeta": "a\"b\\c,}{", "alpha": 0, "é\"k": "v", "A": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Marshal(tt.v, tt.extra)
			if err != nil {
				t.Fatal(err)
			}
			if want := mapBytes(t, tt.want); !bytes.Equal(got, want) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

func TestMarshalRefusesNonObjects(t *testing.T) {
	for _, v := range []any{1, "s", []int{1}, nil} {
		if _, err := Marshal(v, nil); !errors.Is(err, ErrNotObject) {
			t.Errorf("Marshal(%v) = %v, want ErrNotObject", v, err)
		}
	}
	if _, err := Marshal(sample{}, map[string]json.RawMessage{"x": json.RawMessage(`{`)}); err == nil {
		t.Error("an invalid extra member was written")
	}
}

func TestUnmarshalMatchesNamesExactlyAndKeepsTheRest(t *testing.T) {
	var s sample
	extra, err := Unmarshal([]byte(`{"zeta":"z","Alpha":5,"raw":{"a": 1},"-":1,"Skip":"s","other":[1, 2]}`), &s)
	if err != nil {
		t.Fatal(err)
	}
	if s.Zeta != "z" || s.Alpha != 0 || string(s.Raw) != `{"a": 1}` || s.Skip != "" {
		t.Errorf("fields = %+v", s)
	}
	want := map[string]string{"Alpha": "5", "-": "1", "Skip": `"s"`, "other": "[1, 2]"}
	if len(extra) != len(want) {
		t.Errorf("extra = %v, want %v", extra, want)
	}
	for k, v := range want {
		if string(extra[k]) != v {
			t.Errorf("extra[%q] = %s, want %s", k, extra[k], v)
		}
	}
}

func TestUnmarshalErrors(t *testing.T) {
	var s sample
	_, err := Unmarshal([]byte(`{"zeta":"z","alpha":"one"}`), &s)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "alpha" {
		t.Errorf("err = %v, want a FieldError for alpha", err)
	}
	if _, err := Unmarshal([]byte(`[1]`), &s); !errors.Is(err, ErrNotObject) {
		t.Errorf("err = %v, want ErrNotObject", err)
	}
	if _, err := Unmarshal([]byte(`{`), &s); err == nil {
		t.Error("truncated JSON decoded")
	}
	if _, err := Unmarshal([]byte(`{}`), s); err == nil {
		t.Error("decoded into a non-pointer")
	}
}

type open struct {
	A json.RawMessage `json:"a,omitempty"`
	B json.RawMessage `json:"b,omitempty"`
	Z json.RawMessage `json:"z,omitempty"`
}

// FuzzRoundTrip: decoding any object into a struct plus its extra members
// and encoding them again gives the bytes encoding the object as a map gives.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"c":[{"x":"}"}],"b":null}`, `{"z":"\u003c","é":{"a":[1,{"b":2}]},"A":true}`, `{"a\"":1,"a":"\\"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) != nil || m == nil {
			return
		}
		var o open
		extra, err := Unmarshal(data, &o)
		if err != nil {
			t.Fatalf("Unmarshal: %v", err)
		}
		got, err := Marshal(o, extra)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		asMap := make(map[string]any, len(m))
		for k, v := range m {
			asMap[k] = v
		}
		if want := mapBytes(t, asMap); !bytes.Equal(got, want) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	})
}

// BenchmarkMarshal compares a struct with extra members through Marshal
// with the map[string]any it replaces (a chat.completion-sized object).
func BenchmarkMarshal(b *testing.B) {
	type completion struct {
		Choices []json.RawMessage `json:"choices"`
		Created int64             `json:"created"`
		ID      string            `json:"id"`
		Model   string            `json:"model"`
		Object  string            `json:"object"`
		Usage   json.RawMessage   `json:"usage,omitempty"`
	}
	choice := json.RawMessage(`{"finish_reason":"stop","index":0,"logprobs":null,"message":{"content":"a short answer","role":"assistant"}}`)
	usage := json.RawMessage(`{"completion_tokens":4,"prompt_tokens":3,"total_tokens":7}`)
	extra := map[string]json.RawMessage{"system_fingerprint": json.RawMessage(`"fp_x"`), "toolhost": json.RawMessage(`{"cost_quota":0,"request_id":"req_1"}`)}
	b.Run("struct", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := Marshal(completion{Choices: []json.RawMessage{choice}, Created: 1, ID: "chatcmpl-1", Model: "m", Object: "chat.completion", Usage: usage}, extra); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("map", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			m := map[string]any{"choices": []json.RawMessage{choice}, "created": 1, "id": "chatcmpl-1", "model": "m", "object": "chat.completion", "usage": usage}
			for k, v := range extra {
				m[k] = v
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
