package console

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestSchemaFieldsKeepTheSchemasOrderAndKinds(t *testing.T) {
	many := `{"type":"object","properties":{`
	for i := range 500 {
		if i > 0 {
			many += ","
		}
		many += fmt.Sprintf(`"p%d":{"type":"string"}`, i)
	}
	many += "}}"
	deep := `{"type":"object","properties":{"d":` + strings.Repeat(`{"type":"object","properties":{"d":`, 200) + `{}` + strings.Repeat("}}", 200) + `}}`
	for _, tc := range []struct {
		name, schema string
		want         string // name:kind[*], in order
	}{
		{"every kind, in the schema's order", `{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"},"m":{"type":"number"},"b":{"type":"boolean"},"e":{"enum":["x",1,null]},"l":{"type":"array"},"o":{"type":"object"}},"required":["a","e"]}`,
			"z:text a:integer* m:number b:boolean e:enum* l:json o:json"},
		{"a nullable type is its one other type", `{"properties":{"s":{"type":["string","null"]},"u":{"type":["string","integer"]}}}`, "s:text u:json"},
		{"markup and Unicode tricks in names stay names", "{\"properties\":{\"<img src=x onerror=alert(1)>\":{\"type\":\"string\"},\"\u202ertl\u200b\":{\"type\":\"boolean\"}}}",
			"<img src=x onerror=alert(1)>:text \u202ertl\u200b:boolean"},
		{"a duplicated key is one field", `{"properties":{"a":{"type":"string"},"a":{"type":"integer"}}}`, "a:integer"},
		{"no properties: no fields", `{"type":"object"}`, ""},
		{"not an object schema", `[1,2]`, ""},
		{"not JSON", `{"properties":`, ""},
		{"properties that are not an object", `{"properties":[{"type":"string"}]}`, ""},
		{"deeply nested: one JSON field", deep, "d:json"},
		{"hundreds of properties: the first ones", many, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fields := schemaFields(json.RawMessage(tc.schema))
			var got []string
			for _, f := range fields {
				s := f.Name + ":" + f.Kind
				if f.Required {
					s += "*"
				}
				got = append(got, s)
			}
			if tc.schema == many {
				if len(fields) != maxFields || fields[0].Name != "p0" || fields[maxFields-1].ID() != fmt.Sprintf("arg-%d", maxFields-1) {
					t.Errorf("%d fields, first %v", len(fields), got[:1])
				}
				return
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("fields %q, want %q", strings.Join(got, " "), tc.want)
			}
		})
	}
}

func TestFormArgumentsLeaveValidationToThePipeline(t *testing.T) {
	fields := schemaFields(json.RawMessage(`{"properties":{"s":{"type":"string"},"r":{"type":"string"},"n":{"type":"integer"},"x":{"type":"number"},` +
		`"b":{"type":"boolean"},"e":{"enum":["a",2]},"l":{"type":"array"}},"required":["r"]}`))
	for _, tc := range []struct {
		name string
		form url.Values
		want string
		bad  string
	}{
		{"empty fields are left out, a required string is sent empty", url.Values{}, `{"r":""}`, ""},
		{"each kind as its JSON", url.Values{"arg.s": {"hi"}, "arg.n": {"3"}, "arg.x": {"-1.5e2"}, "arg.b": {"false"}, "arg.e": {"2"}, "arg.l": {` ["a"] `}},
			`{"b":false,"e":2,"l":["a"],"n":3,"r":"","s":"hi","x":-1.5e2}`, ""},
		{"a number that is not one is sent as text", url.Values{"arg.n": {"3 apples"}, "arg.x": {`"1"`}}, `{"n":"3 apples","r":"","x":"\"1\""}`, ""},
		{"an enum value that is not JSON is sent as text", url.Values{"arg.e": {"<b>"}}, `{"e":"\u003cb\u003e","r":""}`, ""},
		{"markup in a string stays a string", url.Values{"arg.s": {`<script>alert(1)</script>`}}, `{"r":"","s":"\u003cscript\u003ealert(1)\u003c/script\u003e"}`, ""},
		{"a JSON field that is not JSON is refused", url.Values{"arg.l": {`[1,`}}, "", "l: not JSON"},
		{"a huge string is passed on whole", url.Values{"arg.s": {strings.Repeat("é", 50000)}}, `{"r":"","s":"` + strings.Repeat("é", 50000) + `"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := append([]field(nil), fields...)
			args, bad := formArguments(fs, tc.form)
			if tc.bad != "" {
				if len(bad) != 1 || !strings.HasPrefix(bad[0], tc.bad) {
					t.Errorf("refusals %q, want %q", bad, tc.bad)
				}
				return
			}
			if len(bad) > 0 || string(args) != tc.want {
				t.Errorf("args %s (refusals %q), want %s", args, bad, tc.want)
			}
		})
	}
}

func TestOverrideFormSetsOnlyWhatItIsGiven(t *testing.T) {
	for _, tc := range []struct {
		name string
		form url.Values
		want string
	}{
		{"nothing set", url.Values{"allowed_slots": {"narrator"}}, `{}`},
		{"every field", url.Values{"side_effect_level": {"none"}, "enabled": {"false"}, "require_approval": {"always"}, "async_capability": {"deferred_ok"},
			"default_delivery_mode": {"async_job"}, "slots_set": {"true"}, "allowed_slots": {"narrator", "director"}},
			`{"side_effect_level":"none","allowed_slots":["narrator","director"],"enabled":false,"require_approval":"always","async_capability":"deferred_ok","default_delivery_mode":"async_job"}`},
		{"no slots at all, on purpose", url.Values{"slots_set": {"true"}}, `{"allowed_slots":[]}`},
		{"hostile values are passed for REST to refuse", url.Values{"side_effect_level": {"<b>x</b>"}}, `{"side_effect_level":"\u003cb\u003ex\u003c/b\u003e"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := json.Marshal(overrideOf(tc.form))
			if string(b) != tc.want {
				t.Errorf("%s, want %s", b, tc.want)
			}
		})
	}
}
