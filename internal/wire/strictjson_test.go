package wire

import (
	"errors"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		in, err string
	}{
		{`{"a":1,"b":[1,{"a":2}],"c":{"a":{"a":null}}}`, ""},
		{`[{"a":1},{"a":1}]`, ""},
		{` "x" `, ""},
		{`{}`, ""},
		{`{"name":"roll_dice","name":"get_time"}`, `duplicate key "name"`},
		{`{"params":{"x":1,"x":2}}`, `duplicate key "x"`},
		{`[{"a":{"b":1,"b":1}}]`, `duplicate key "b"`},
		{`{"a":1} garbage`, "invalid character 'g'"},
		{`{"a":1}{"a":1}`, "after the JSON value"},
		{`{"a":1`, "end of input"},
		{``, "empty"},
		{`{"a":}`, "invalid character"},
		{strings.Repeat("[", 600) + strings.Repeat("]", 600), "nested deeper"},
	} {
		err := Check([]byte(tc.in))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("Check(%.40q): %v", tc.in, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrNotStrict)):
			t.Errorf("Check(%.40q) = %v, want %q", tc.in, err, tc.err)
		}
	}
}

func FuzzCheck(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"b":2}]}`))
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Fuzz(func(t *testing.T, b []byte) { _ = Check(b) })
}

func TestCheckDepthLeavesDeeperDuplicates(t *testing.T) {
	env := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"roll_dice","arguments":{"sides":20,"sides":6}}}`
	if err := CheckDepth([]byte(env), 2); err != nil {
		t.Fatalf("arguments are not the envelope's: %v", err)
	}
	if err := CheckDepth([]byte(`{"params":{"name":"a","name":"b"}}`), 2); err == nil {
		t.Fatal("duplicate in params passed")
	}
	if err := CheckDepth([]byte(env+" x"), 2); err == nil {
		t.Fatal("trailing data passed")
	}
}
