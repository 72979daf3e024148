package wire

import (
	"encoding/json"
	"errors"
	"testing"
)

// The error object writes the bytes of the map it replaced, details among
// the fields in sorted order, and reads them back unchanged.
func TestErrorObjectWritesTheMapsBytes(t *testing.T) {
	type file struct {
		Size int64  `json:"size"`
		Name string `json:"name"`
	}
	tests := []struct {
		name    string
		obj     ErrorObject
		details any
		old     map[string]any
	}{
		{"code and message", ErrorObject{Code: "not_found", Message: "no such <thing> & more"}, nil,
			map[string]any{"code": "not_found", "message": "no such <thing> & more"}},
		{"field", ErrorObject{Code: "validation_error", Field: "url", Message: "is not a URL"}, nil,
			map[string]any{"code": "validation_error", "field": "url", "message": "is not a URL"}},
		{"retry and a detail between the fields", ErrorObject{Code: "busy", Message: "wait", RetryAfterMS: 1500},
			struct {
				MaxDepth int    `json:"max_depth"`
				Rule     string `json:"rule"`
			}{64, "x"},
			map[string]any{"code": "busy", "message": "wait", "retry_after_ms": 1500, "max_depth": 64, "rule": "x"}},
		{"nested structs and raw JSON sorted", ErrorObject{Code: "timeout", Message: "stopped"},
			struct {
				Files  []file          `json:"files"`
				Result json.RawMessage `json:"result"`
			}{[]file{{3, "a.txt"}}, json.RawMessage(`{"b":1.50,"a":[2e1]}`)},
			map[string]any{"code": "timeout", "message": "stopped",
				"files": []any{map[string]any{"name": "a.txt", "size": 3}}, "result": map[string]any{"a": []any{20}, "b": 1.5}}},
		{"a field wins over a detail", ErrorObject{Code: "busy", Message: "wait", RetryAfterMS: 10},
			map[string]int{"retry_after_ms": 99, "code": 1},
			map[string]any{"code": "busy", "message": "wait", "retry_after_ms": 10}},
		{"an unset field leaves the name to the detail", ErrorObject{Code: "busy", Message: "wait"},
			map[string]int{"retry_after_ms": 99},
			map[string]any{"code": "busy", "message": "wait", "retry_after_ms": 99}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := tt.obj
			if err := obj.SetDetails(tt.details); err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(ErrorBody{Error: obj})
			want, _ := json.Marshal(map[string]any{"error": tt.old})
			if err != nil || string(got) != string(want) {
				t.Fatalf("%v\n got %s\nwant %s", err, got, want)
			}
			var back ErrorBody
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			again, err := json.Marshal(back)
			if err != nil || string(again) != string(want) {
				t.Fatalf("read back and written: %v\n got %s\nwant %s", err, again, want)
			}
		})
	}
}

// An error object read back writes its details as a map of them did:
// HTML unescaped for an outer encoder to decide, keys sorted, numbers as
// float64.
func TestErrorObjectReadBackAsAMap(t *testing.T) {
	in := `{"code":"x","message":"a \u003cb\u003e","stdout":"\u003c1\u003e","result":{"b":1.50,"a":2e1}}`
	var obj ErrorObject
	if err := json.Unmarshal([]byte(in), &obj); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal([]byte(in), &m)
	want := mapBytes(t, m)
	got, err := obj.MarshalJSON()
	if err != nil || string(got) != string(want) {
		t.Fatalf("%v\n got %s\nwant %s", err, got, want)
	}
}

func TestErrorObjectRefusesDetailsThatAreNoObject(t *testing.T) {
	for _, v := range []any{[]int{1}, "text", 3} {
		var obj ErrorObject
		if err := obj.SetDetails(v); !errors.Is(err, ErrNotObject) {
			t.Errorf("SetDetails(%#v) = %v, want ErrNotObject", v, err)
		}
	}
	var obj ErrorObject
	if err := json.Unmarshal([]byte(`["code"]`), &obj); !errors.Is(err, ErrNotObject) {
		t.Errorf("Unmarshal of an array = %v, want ErrNotObject", err)
	}
	if err := obj.SetDetails(nil); err != nil || obj.Details != nil {
		t.Errorf("SetDetails(nil) = %v, details %v", err, obj.Details)
	}
}
