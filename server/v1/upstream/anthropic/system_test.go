package anthropic

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/server/v1/loop"
)

// A {"role":"system"} message among the messages (Claude Code sends its
// environment so) is system text; anything but text in it is refused.
func TestDecodeMessageSystemRole(t *testing.T) {
	cases := []struct {
		name, raw, want, err string
	}{
		{"string", `{"role":"system","content":"env: linux"}`, "env: linux", ""},
		{"text blocks", `{"role":"system","content":[{"type":"text","text":"a"},{"type":"text","text":"b","cache_control":{"type":"ephemeral"}}]}`, "a\n\nb", ""},
		{"empty list", `{"role":"system","content":[]}`, "", ""},
		{"image", `{"role":"system","content":[{"type":"image","source":{}}]}`, "", `not "image"`},
		{"number", `{"role":"system","content":7}`, "", "string or a list of text blocks"},
		{"unicode", `{"role":"system","content":"\u202eevil\u0000"}`, "\u202eevil\x00", ""},
		{"other role", `{"role":"tool","content":"x"}`, "", `not "tool"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msgs, err := DecodeMessage(json.RawMessage(tc.raw))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || len(msgs) != 1 || msgs[0].Role != loop.RoleSystem || msgs[0].Text != tc.want || msgs[0].Raw != nil {
				t.Fatalf("got %+v, %v", msgs, err)
			}
		})
	}
}

// The system text of such a message reaches an Anthropic upstream in the
// top-level system, after the request's own.
func TestSystemMessageJoinsTheTopLevelSystem(t *testing.T) {
	top := loop.Message{Role: loop.RoleSystem, Text: "Be brief.", Dialect: loop.DialectAnthropic, Raw: json.RawMessage(`"Be brief."`)}
	mid, err := DecodeMessage(json.RawMessage(`{"role":"system","content":[{"type":"text","text":"env: linux"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	user, err := DecodeMessage(json.RawMessage(`{"role":"user","content":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	msgs := append(append([]loop.Message{top}, user...), mid...)
	system, turns, err := encodeMessages(msgs)
	if err != nil {
		t.Fatal(err)
	}
	if system != "Be brief.\n\nenv: linux" || len(turns) != 1 {
		t.Fatalf("system %v, turns %d", system, len(turns))
	}
}
