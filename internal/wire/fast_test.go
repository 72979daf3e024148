package wire

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// scanCases are inputs on which the scan must agree with the walk: it may
// say "not known" (false) on any of them, but never pass what the walk
// refuses; the ones marked fast must pass without the walk.
var scanCases = []struct {
	name string
	in   string
	fast bool // the scan vouches for it at keyDepth 2
}{
	{"call", string(callBody), true},
	{"scalar", ` "x" `, true},
	{"empty object", `{}`, true},
	{"empty array", `[ ]`, true},
	{"empty", ``, false},
	{"blank", " \n\t", false},
	{"dup depth 1", `{"a":1,"a":2}`, false},
	{"dup depth 2", `{"p":{"x":1,"x":2}}`, false},
	{"dup depth 2 in array", `{"p":[{"x":1,"x":2}]}`, false},
	{"dup depth 3 allowed", `{"p":{"q":{"x":1,"x":2}}}`, true},
	{"dup in top array's objects", `[{"a":1},{"a":1}]`, true},
	{"escaped-equal keys", `{"a":1,"\u0061":2}`, false},
	{"escaped key alone", `{"\u0061":1}`, false},
	{"escaped-equal deeper", `{"p":{"q":{"a":1,"\u0061":2}}}`, true},
	{"non-ASCII key", `{"é":1,"é":2}`, false},
	{"invalid UTF-8 value", "{\"a\":\"\xff\xfe\"}", true},
	{"invalid UTF-8 keys", "{\"\xff\":1,\"\xfe\":2}", false},
	{"trailing garbage", `{"a":1} x`, false},
	{"trailing value", `{"a":1}{"a":1}`, false},
	{"trailing whitespace", "{\"a\":1}\r\n", true},
	{"cut short", `{"a":1`, false},
	{"missing value", `{"a":}`, false},
	{"trailing comma", `{"a":1,}`, false},
	{"array trailing comma", `[1,]`, false},
	{"bare key", `{a:1}`, false},
	{"single quotes", `{'a':1}`, false},
	{"control char", "{\"a\":\"x\ny\"}", false},
	{"bad escape", `{"a":"\x"}`, false},
	{"short unicode escape", `{"a":"\u12"}`, false},
	{"lone surrogate", `{"a":"\ud800"}`, true},
	{"huge number", `{"a":1e400}`, false},
	{"huge negative", `[-1E+309]`, false},
	{"tiny number", `[1e-400]`, true},
	{"long integer", `[` + strings.Repeat("9", 400) + `]`, false},
	{"long fraction", `[0.` + strings.Repeat("9", 400) + `]`, true},
	{"leading zero", `[01]`, false},
	{"bare minus", `[-]`, false},
	{"dot without digits", `[1.]`, false},
	{"exponent without digits", `[1e]`, false},
	{"literals", `[true,false,null]`, true},
	{"bad literal", `[tru]`, false},
	{"literal cut", `nul`, false},
	{"deep 512", strings.Repeat("[", 512) + strings.Repeat("]", 512), true},
	{"deep 513", strings.Repeat("[", 513) + strings.Repeat("]", 513), false},
	{"deep objects", strings.Repeat(`{"a":`, 600) + "1" + strings.Repeat("}", 600), false},
	{"many keys", manyKeys(40), false},
	{"many keys deeper", `{"p":{"q":` + manyKeys(40) + `}}`, true},
}

func manyKeys(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"k` + strings.Repeat("x", i) + `":1`)
	}
	return b.String() + "}"
}

func TestScanAgreesWithWalk(t *testing.T) {
	for _, tc := range scanCases {
		t.Run(tc.name, func(t *testing.T) {
			for _, depth := range []int{1, 2, MaxDepth} {
				b := []byte(tc.in)
				fast := Scan(b, depth, nil)
				want := walk(b, depth)
				if fast && want != nil {
					t.Errorf("depth %d: scan passed what the walk refuses: %v", depth, want)
				}
				if got := CheckDepth(b, depth); (got == nil) != (want == nil) || (got != nil && got.Error() != want.Error()) {
					t.Errorf("depth %d: CheckDepth = %v, walk = %v", depth, got, want)
				}
			}
			if got := Scan([]byte(tc.in), 2, nil); got != tc.fast {
				t.Errorf("Scan at depth 2 = %v, want %v", got, tc.fast)
			}
		})
	}
}

func TestScanMembers(t *testing.T) {
	var got []string
	ok := Scan([]byte(` {"id" : 7, "method":"tools/call" ,"params":{"name":"x"} } `), 2, func(k, v []byte) {
		got = append(got, string(k)+"="+string(v))
	})
	want := []string{"id=7", `method="tools/call"`, `params={"name":"x"}`}
	if !ok || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("Scan = %v, members %q, want %q", ok, got, want)
	}
}

func FuzzScanAgreesWithWalk(f *testing.F) {
	for _, tc := range scanCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, depth := range []int{1, 2, MaxDepth} {
			if Scan(b, depth, nil) {
				if err := walk(b, depth); err != nil {
					t.Fatalf("depth %d: scan passed %q, the walk refuses: %v", depth, b, err)
				}
			}
		}
	})
}

func TestDecode(t *testing.T) {
	num := func(n json.Number) (any, error) { return "n" + string(n), nil }
	for _, tc := range []struct {
		in   string
		want any
		ok   bool
	}{
		{` {"a" : [ 1 , -2.5e3 , true , false , null , "s" , { } , [ ] ] } `, map[string]any{"a": []any{"n1", "n-2.5e3", true, false, nil, "s", map[string]any{}, []any{}}}, true},
		{`{"k":"a\"b\u00e9\ud83d\ude00","r":"é","x":"` + "\xff" + `"}`, map[string]any{"k": "a\"bé😀", "r": "é", "x": "\ufffd"}, true},
		{`{"a":{"b":{"c":[]}}}`, map[string]any{"a": map[string]any{"b": map[string]any{"c": []any{}}}}, true},
		{`"top"`, "top", true},
		{`{"a":1,"a":2}`, nil, false},             // duplicates: the walk words the error
		{`{"p":{"q":{"a":1,"a":2}}}`, nil, false}, // at every depth
		{`{"\u0061":1}`, nil, false},              // escaped key
		{`{"a":1e999}`, nil, false},
		{`{"a":1} x`, nil, false},
	} {
		got, ok := Decode([]byte(tc.in), num)
		if ok != tc.ok || (ok && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("Decode(%.40q) = %#v, %v; want %#v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := Decode([]byte(`[1]`), func(json.Number) (any, error) { return nil, errors.New("no") }); ok {
		t.Error("a failing number func must make Decode say not known")
	}
}
