package tooldef

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestApplyRefusesWhatThePipelineCouldNotRun(t *testing.T) {
	rules := Rules{Slots: []string{"narrator"}, Reserved: func(n string) bool { return n == "get_time" }}
	cases := []struct {
		name, body, field string
	}{
		{"defaults", `{"name":"ok"}`, ""},
		{"no name", `{}`, "name"},
		{"fullwidth name", `{"name":"ｏｋ"}`, "name"},
		{"zero-width joiner", "{\"name\":\"o\u200dk\"}", "name"},
		{"builtin name", `{"name":"get_time"}`, "name"},
		{"schema not an object type", `{"name":"ok","parameters":{"type":"array"}}`, "parameters"},
		{"unknown slot", `{"name":"ok","allowed_slots":["villain"]}`, "allowed_slots"},
		{"handler without type", `{"name":"ok","handler":{"script":"return 1;"}}`, "handler"},
		{"script with extra keys", `{"name":"ok","handler_type":"script","handler":{"script":"1","env":"x"}}`, "handler"},
		{"empty script", `{"name":"ok","handler_type":"script","handler":{"script":""}}`, "handler"},
		{"script handler", `{"name":"ok","handler_type":"script","handler":{"script":"return args;"}}`, ""},
	}
	for _, c := range cases {
		var in Input
		if err := json.Unmarshal([]byte(c.body), &in); err != nil {
			t.Fatal(err)
		}
		d := New()
		err := rules.Apply(&d, in, true)
		var fe *FieldError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.field != "" && (!errors.As(err, &fe) || fe.Field != c.field):
			t.Errorf("%s: %v, want an error of %s", c.name, err, c.field)
		}
		if c.name == "script handler" && d.Script() != "return args;" {
			t.Errorf("script %q", d.Script())
		}
	}
}
