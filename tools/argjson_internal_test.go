package tools

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
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
