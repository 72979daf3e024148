package quickjs

import (
	"strconv"
	"strings"
	"testing"
)

// skipMillionLevelsInShort skips, under -short, a case whose program builds
// a value a million levels deep: each takes seconds of the interpreter's
// time. make test runs them; -short keeps the shallower cases beside them.
func skipMillionLevelsInShort(t *testing.T, code string) {
	t.Helper()
	if testing.Short() && strings.Contains(code, "1e6") {
		t.Skip("builds a value a million levels deep, seconds; runs in make test")
	}
}

// The nesting limit holds on both of the prelude's paths: the walk that
// settles a value of up to walkBudget properties, and the replacer that
// follows stringify through a larger one; a value the replacer serializes
// is written exactly as stringify writes it.
func TestNestingLimitHoldsPastTheWalksBudget(t *testing.T) {
	m := sharedModule(t)
	wide := "const w = []; for (let i = 0; i < 20000; i++) w.push(i);\n"
	for _, tc := range []struct{ name, code, value, why string }{
		{"wide, then a million levels", wide + "let v = []; for (let i = 1; i < 1e6; i++) v = [v]; [w, v]", "", "nests more than 997 levels deep"},
		{"wide, then one level too many", wide + "let v = []; for (let i = 1; i < 997; i++) v = {v}; [w, v]", "", "nests more than 997 levels deep"},
		{"wide, then as deep as allowed", wide + "let v = []; for (let i = 1; i < 996; i++) v = [v]; [w, v]", "998 [", ""},
		{"wide and shallow, written as stringify writes it", wide + "[w, {a: [1, {b: 2}], d: new Date(0)}, 'x']", "", ""},
		{"wide, then a cycle", wide + "const o = {}; o.o = o; [w, o]", "", "circular"},
		// What program code makes is seen only as stringify writes it:
		// a million levels from a toJSON or a getter are refused as fast.
		{"a million levels by toJSON", "({toJSON() { let v = []; for (let i = 1; i < 1e6; i++) v = [v]; return v }})", "", "nests more than 997 levels deep"},
		{"a million levels by a nested toJSON", "[1, {a: {toJSON() { let v = []; for (let i = 1; i < 1e6; i++) v = [v]; return v }}}]", "", "nests more than 997 levels deep"},
		{"a million levels by a getter", "let v = []; for (let i = 1; i < 1e6; i++) v = [v]; [{get v() { return v }}]", "", "nests more than 997 levels deep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			skipMillionLevelsInShort(t, tc.code)
			res, _, err := run(t, m, Options{}, tc.code)
			if err != nil {
				t.Fatalf("Eval: %v", err) // res is nil then
			}
			if res.Exception != "" {
				t.Fatalf("Eval: exception %q", res.Exception)
			}
			switch {
			case tc.why != "":
				if string(res.Value) != "null" || !strings.Contains(res.ValueError, tc.why) {
					t.Errorf("value %.40s, ValueError %q, want null and %q", res.Value, res.ValueError, tc.why)
				}
			case tc.value != "":
				if n := strings.Count(string(res.Value), "["); !strings.HasPrefix(string(res.Value), "[[0,1,2,") || strconv.Itoa(n)+" [" != tc.value || res.ValueError != "" {
					t.Errorf("value %.40s with %d [, ValueError %q, want %s", res.Value, n, res.ValueError, tc.value)
				}
			default:
				want := "[[0,1,2,"
				if !strings.HasPrefix(string(res.Value), want) || !strings.HasSuffix(string(res.Value), `19999],{"a":[1,{"b":2}],"d":"1970-01-01T00:00:00.000Z"},"x"]`) || res.ValueError != "" {
					t.Errorf("value %.40s…%s, ValueError %q", res.Value, res.Value[max(len(res.Value)-60, 0):], res.ValueError)
				}
			}
		})
	}
}

// console.log's %j is bounded as the last value is: a value nested past
// the limit (a million levels, which stringify alone would still be
// scanning at any deadline; or built by toJSON) prints a marker, a
// shallower one its JSON, a cycle [Circular]; the program goes on.
func TestConsoleLogJSONIsBoundedByTheNestingLimit(t *testing.T) {
	m := sharedModule(t)
	deep := "let v = []; for (let i = 1; i < 1e6; i++) v = {v};\n"
	for _, tc := range []struct{ name, code, stdout string }{
		{"a million levels", deep + "console.log('%j', v); 'after'", "[nested more than 997 levels deep]\n"},
		{"one level too many", "let v = []; for (let i = 1; i < 998; i++) v = [v]; console.log('%j!', v); 'after'", "[nested more than 997 levels deep]!\n"},
		{"too deep by toJSON", "console.log('%j', {toJSON() { let v = []; for (let i = 1; i < 998; i++) v = [v]; return v }}); 'after'", "[nested more than 997 levels deep]\n"},
		{"as deep as allowed", "let v = []; for (let i = 1; i < 997; i++) v = [v]; console.log('%j', v); 'after'", strings.Repeat("[", 997) + strings.Repeat("]", 997) + "\n"},
		{"shallow", "console.log('x=%j', {a: [1, 'b']}); 'after'", "x={\"a\":[1,\"b\"]}\n"},
		{"a cycle", "const o = {}; o.o = o; console.log('%j', o); 'after'", "[Circular]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			skipMillionLevelsInShort(t, tc.code)
			res, out, err := run(t, m, Options{}, tc.code)
			if err != nil {
				t.Fatalf("Eval: %v", err) // res is nil then
			}
			if res.Exception != "" || string(res.Value) != `"after"` {
				t.Fatalf("Eval: exception %q, value %s", res.Exception, res.Value)
			}
			if out.stdout.String() != tc.stdout {
				t.Errorf("stdout %.80q, want %.80q", out.stdout.String(), tc.stdout)
			}
		})
	}
}
